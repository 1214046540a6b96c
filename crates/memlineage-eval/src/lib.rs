//! memlineage-eval (being written).
