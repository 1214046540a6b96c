//! The τ×K ablation (stub).
