//! A small llama forward pass over a GGUF file's quantized weights, returning the softmax
//! attention probabilities of the layers the caller asks for.
//!
//! candle-transformers' `quantized_llama::ModelWeights` computes the same function but keeps its
//! attention matrices to itself; this is a port of it (same tensor operations, in the same order,
//! so the logits agree — `tests/model/forward.rs` checks that) that:
//!
//! * takes `&self` (the KV cache is a separate [`KvCache`] value owned by the caller), so one
//!   loaded model serves concurrent callers;
//! * returns the post-softmax attention probabilities `[n_head, q_len, kv_len]` of selected layers;
//! * can skip the output projection (49 152 × 576) when only attention is needed.
//!
//! Architecture (llama): token embedding → N × (RmsNorm → attention with RoPE and grouped-query
//! heads → residual → RmsNorm → SiLU-gated MLP → residual) → RmsNorm → output projection (tied to
//! the embedding when the file has no `output.weight`, as in SmolLM2). RoPE is the interleaved
//! ("NORM") variant, as llama.cpp uses for the `llama` architecture, with the file's
//! `llama.rope.freq_base` (100 000 for SmolLM2).

use std::io::{Read, Seek};
use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor, gguf_file};
use candle_core::{DType, Device, Module, Tensor};

use crate::ModelError;

/// How the linear layers compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compute {
    /// Dequantize every weight matrix to `f32` once, at load, and multiply with candle's `f32`
    /// matmul (the `gemm` crate, which picks AVX2 / AVX-512 / NEON kernels at run time).
    /// About 0.57 GB of memory, and many times faster than [`Compute::Quantized`] on x86-64:
    /// candle has no SIMD kernel for Q4_1 at all, and its Q8_0 kernels are only compiled in with
    /// `-C target-cpu` flags. The weights are exactly the file's (dequantization is exact); only
    /// the activations stay in `f32` instead of being rounded to 8 bits per matmul.
    #[default]
    F32,
    /// Keep the weights quantized and multiply like llama.cpp / candle-transformers (activations
    /// quantized to Q8 blocks, integer dot products). Smallest memory (~0.1 GB); bit-for-bit
    /// the computation of candle-transformers' `quantized_llama`, which the tests compare against.
    Quantized,
}

/// Hyper-parameters read from the GGUF metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    /// Number of transformer blocks (`llama.block_count`).
    pub n_layer: usize,
    /// Query heads (`llama.attention.head_count`).
    pub n_head: usize,
    /// Key/value heads (`llama.attention.head_count_kv`).
    pub n_kv_head: usize,
    /// Model width (`llama.embedding_length`).
    pub n_embd: usize,
    /// `n_embd / n_head`.
    pub head_dim: usize,
    /// Rotated dimensions per head (`llama.rope.dimension_count`).
    pub rope_dim: usize,
    /// RoPE base frequency θ (`llama.rope.freq_base`).
    pub rope_theta: f32,
    /// RmsNorm epsilon (`llama.attention.layer_norm_rms_epsilon`).
    pub rms_eps: f64,
    /// Training context length (`llama.context_length`); the longest sequence accepted.
    pub context_length: usize,
}

struct Layer {
    attn_norm: Tensor,
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    ffn_norm: Tensor,
    w_gate: QMatMul,
    w_up: QMatMul,
    w_down: QMatMul,
}

/// Per-sequence key/value cache for incremental decoding. Cloning is cheap (the tensors are
/// shared; appending creates new ones), which is how [`crate::Prefix`] forks a prompt.
#[derive(Default, Clone)]
pub struct KvCache {
    layers: Vec<Option<(Tensor, Tensor)>>,
}

impl KvCache {
    /// Number of positions already in the cache.
    pub fn len(&self) -> usize {
        self.layers
            .first()
            .and_then(|l| l.as_ref())
            .and_then(|(k, _)| k.dim(2).ok())
            .unwrap_or(0)
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a forward pass should return besides updating the cache.
#[derive(Debug, Clone, Default)]
pub struct ForwardRequest {
    /// Layers whose attention probabilities to return (indices into `0..n_layer`).
    pub attention_layers: Vec<usize>,
    /// When set, keep only these query rows (positions relative to the tokens passed in) of
    /// each returned attention matrix, summed over heads: `[rows, kv_len]` instead of
    /// `[n_head, q_len, kv_len]`. Reduced as each layer finishes, so the full matrices are
    /// never all held at once.
    pub attention_rows_head_sum: Option<std::ops::Range<usize>>,
    /// Compute the logits of the last position.
    pub last_logits: bool,
}

/// The result of [`Llama::forward`].
pub struct ForwardOutput {
    /// `(layer, probabilities)` for every requested layer in increasing layer order;
    /// probabilities shaped `[n_head, q_len, kv_len]`, or `[rows, kv_len]` summed over heads
    /// when [`ForwardRequest::attention_rows_head_sum`] is set.
    pub attentions: Vec<(usize, Tensor)>,
    /// The logits of the last position, `[vocab]`, when requested.
    pub last_logits: Option<Tensor>,
}

/// The loaded weights.
pub struct Llama {
    cfg: LlamaConfig,
    embed: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    cos: Tensor,
    sin: Tensor,
    device: Device,
}

fn md<'a>(ct: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value, String> {
    ct.metadata
        .get(key)
        .ok_or_else(|| format!("metadata key {key} is missing"))
}

fn md_usize(ct: &gguf_file::Content, key: &str) -> Result<usize, String> {
    md(ct, key)?
        .to_u32()
        .map(|v| v as usize)
        .map_err(|e| format!("metadata key {key}: {e}"))
}

impl Llama {
    /// Reads the hyper-parameters and weights from a parsed GGUF file.
    ///
    /// Errors are returned as plain strings; the caller wraps them with the file's path.
    pub fn from_gguf<R: Read + Seek>(
        ct: &gguf_file::Content,
        reader: &mut R,
        compute: Compute,
    ) -> Result<Self, String> {
        let arch = md(ct, "general.architecture")?
            .to_string()
            .map_err(|e| e.to_string())?;
        if arch != "llama" {
            return Err(format!(
                "architecture is {arch:?}; only \"llama\" is supported"
            ));
        }
        let n_layer = md_usize(ct, "llama.block_count")?;
        let n_head = md_usize(ct, "llama.attention.head_count")?;
        let n_kv_head = md_usize(ct, "llama.attention.head_count_kv")?;
        let n_embd = md_usize(ct, "llama.embedding_length")?;
        if n_expert(ct) > 1 {
            return Err("mixture-of-experts llama models are not supported".into());
        }
        if n_head == 0 || n_kv_head == 0 || n_embd % n_head != 0 || n_head % n_kv_head != 0 {
            return Err(format!(
                "inconsistent head counts (embedding {n_embd}, heads {n_head}, kv heads {n_kv_head})"
            ));
        }
        let head_dim = n_embd / n_head;
        let rope_dim = md_usize(ct, "llama.rope.dimension_count").unwrap_or(head_dim);
        if rope_dim != head_dim {
            return Err(format!(
                "partial rotary embeddings (rope dim {rope_dim} != head dim {head_dim}) are not supported"
            ));
        }
        let rope_theta = md(ct, "llama.rope.freq_base")
            .and_then(|v| v.to_f32().map_err(|e| e.to_string()))
            .unwrap_or(10_000.0);
        let rms_eps = md(ct, "llama.attention.layer_norm_rms_epsilon")?
            .to_f32()
            .map_err(|e| e.to_string())? as f64;
        let context_length = md_usize(ct, "llama.context_length").unwrap_or(4096);
        let cfg = LlamaConfig {
            n_layer,
            n_head,
            n_kv_head,
            n_embd,
            head_dim,
            rope_dim,
            rope_theta,
            rms_eps,
            context_length,
        };
        let device = Device::Cpu;
        Self::load_weights(cfg, ct, reader, device, compute).map_err(|e| e.to_string())
    }

    fn load_weights<R: Read + Seek>(
        cfg: LlamaConfig,
        ct: &gguf_file::Content,
        reader: &mut R,
        device: Device,
        compute: Compute,
    ) -> candle_core::Result<Self> {
        let mut qt = |name: &str| ct.tensor(reader, name, &device);
        let matmul = |t: Arc<QTensor>| -> candle_core::Result<QMatMul> {
            match compute {
                Compute::F32 => Ok(QMatMul::Tensor(t.dequantize(&t.device())?)),
                Compute::Quantized => QMatMul::from_arc(t),
            }
        };
        let embed = Arc::new(qt("token_embd.weight")?);
        let norm = qt("output_norm.weight")?.dequantize(&device)?;
        let output = match qt("output.weight") {
            Ok(t) => matmul(Arc::new(t))?,
            // Tied embeddings (SmolLM2): the output projection is the embedding matrix.
            Err(_) => matmul(embed.clone())?,
        };
        let mut layers = Vec::with_capacity(cfg.n_layer);
        for i in 0..cfg.n_layer {
            let mut w = |suffix: &str| qt(&format!("blk.{i}.{suffix}")).map(Arc::new);
            layers.push(Layer {
                attn_norm: w("attn_norm.weight")?.dequantize(&device)?,
                wq: matmul(w("attn_q.weight")?)?,
                wk: matmul(w("attn_k.weight")?)?,
                wv: matmul(w("attn_v.weight")?)?,
                wo: matmul(w("attn_output.weight")?)?,
                ffn_norm: w("ffn_norm.weight")?.dequantize(&device)?,
                w_gate: matmul(w("ffn_gate.weight")?)?,
                w_up: matmul(w("ffn_up.weight")?)?,
                w_down: matmul(w("ffn_down.weight")?)?,
            });
        }
        let (cos, sin) = rope_tables(&cfg, &device)?;
        Ok(Self {
            cfg,
            embed,
            layers,
            norm,
            output,
            cos,
            sin,
            device,
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.cfg
    }

    /// Runs `tokens` (appended after whatever `cache` holds) through the model.
    pub fn forward(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
        req: &ForwardRequest,
    ) -> Result<ForwardOutput, ModelError> {
        let pos = cache.len();
        let q_len = tokens.len();
        if q_len == 0 {
            return Err(ModelError::InvalidInput {
                reason: "empty token sequence".into(),
            });
        }
        if pos + q_len > self.cfg.context_length {
            return Err(ModelError::InvalidInput {
                reason: format!(
                    "sequence of {} tokens exceeds the model's context of {} tokens",
                    pos + q_len,
                    self.cfg.context_length
                ),
            });
        }
        if let Some(&bad) = req
            .attention_layers
            .iter()
            .find(|&&l| l >= self.cfg.n_layer)
        {
            return Err(ModelError::InvalidInput {
                reason: format!(
                    "layer {bad} requested; the model has {} layers",
                    self.cfg.n_layer
                ),
            });
        }
        let vocab = self.embed.shape().dims()[0];
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
            return Err(ModelError::InvalidInput {
                reason: format!("token id {bad} is outside the vocabulary of {vocab}"),
            });
        }
        if let Some(r) = &req.attention_rows_head_sum
            && (r.start > r.end || r.end > q_len)
        {
            return Err(ModelError::InvalidInput {
                reason: format!("attention rows {r:?} outside the {q_len} tokens passed"),
            });
        }
        if cache.layers.len() != self.cfg.n_layer {
            cache.layers = vec![None; self.cfg.n_layer];
        }

        let ids = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        let mut x = self.embed.embedding(&ids)?; // [1, q, n_embd]
        let mask = causal_mask(q_len, pos, &self.device)?;
        let cos = self.cos.narrow(0, pos, q_len)?;
        let sin = self.sin.narrow(0, pos, q_len)?;
        let mut attentions = Vec::with_capacity(req.attention_layers.len());
        // Only the layers up to the last one whose output is needed must run.
        let last_needed = if req.last_logits {
            self.cfg.n_layer
        } else {
            req.attention_layers.iter().max().map_or(0, |&l| l + 1)
        };

        for (li, layer) in self.layers.iter().enumerate().take(last_needed) {
            let want_attn = req.attention_layers.contains(&li);
            let residual = &x;
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, self.cfg.rms_eps as f32)?;
            let (y, probs) =
                self.attention(layer, &h, mask.as_ref(), &cos, &sin, &mut cache.layers[li])?;
            if want_attn {
                let probs = probs.squeeze(0)?; // [n_head, q, kv]
                let probs = match &req.attention_rows_head_sum {
                    None => probs,
                    Some(r) => probs.narrow(1, r.start, r.len())?.sum(0)?,
                };
                attentions.push((li, probs));
            }
            x = (y + residual)?;
            let residual = &x;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, self.cfg.rms_eps as f32)?;
            let gate = layer.w_gate.forward(&h)?;
            let up = layer.w_up.forward(&h)?;
            let h = layer
                .w_down
                .forward(&(candle_nn::ops::silu(&gate)? * up)?)?;
            x = (h + residual)?;
        }

        let last_logits = if req.last_logits {
            let h = candle_nn::ops::rms_norm(&x, &self.norm, self.cfg.rms_eps as f32)?;
            let h = h.narrow(1, q_len - 1, 1)?.squeeze(1)?; // [1, n_embd]
            Some(self.output.forward(&h)?.squeeze(0)?)
        } else {
            None
        };
        Ok(ForwardOutput {
            attentions,
            last_logits,
        })
    }

    /// One attention block. Returns the block output `[1, q, n_embd]` and the attention
    /// probabilities `[1, n_head, q, kv]`.
    fn attention(
        &self,
        layer: &Layer,
        x: &Tensor,
        mask: Option<&Tensor>,
        cos: &Tensor,
        sin: &Tensor,
        cache: &mut Option<(Tensor, Tensor)>,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let cfg = &self.cfg;
        let (b, q_len, n_embd) = x.dims3()?;
        let q = layer
            .wq
            .forward(x)?
            .reshape((b, q_len, cfg.n_head, cfg.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let k = layer
            .wk
            .forward(x)?
            .reshape((b, q_len, cfg.n_kv_head, cfg.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let v = layer
            .wv
            .forward(x)?
            .reshape((b, q_len, cfg.n_kv_head, cfg.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        // GGUF llama weights are laid out for the interleaved rotary embedding.
        let q = candle_nn::rotary_emb::rope_i(&q, cos, sin)?;
        let k = candle_nn::rotary_emb::rope_i(&k, cos, sin)?;

        let (k, v) = match cache.take() {
            None => (k, v),
            Some((kc, vc)) => (Tensor::cat(&[&kc, &k], 2)?, Tensor::cat(&[&vc, &v], 2)?),
        };
        *cache = Some((k.clone(), v.clone()));

        let n_rep = cfg.n_head / cfg.n_kv_head;
        let k = repeat_kv(k, n_rep)?;
        let v = repeat_kv(v, n_rep)?;
        let att = (q.matmul(&k.t()?)? / (cfg.head_dim as f64).sqrt())?;
        let att = match mask {
            None => att,
            Some(m) => att.broadcast_add(m)?,
        };
        let probs = candle_nn::ops::softmax_last_dim(&att)?;
        let y = probs.matmul(&v.contiguous()?)?;
        let y = y.transpose(1, 2)?.reshape((b, q_len, n_embd))?;
        let y = layer.wo.forward(&y)?;
        Ok((y, probs))
    }
}

fn n_expert(ct: &gguf_file::Content) -> usize {
    ct.metadata
        .get("llama.expert_count")
        .and_then(|v| v.to_u32().ok())
        .unwrap_or(0) as usize
}

/// `[context, head_dim / 2]` cosine and sine tables, θ_i = base^(-2i / d), as llama.cpp.
fn rope_tables(cfg: &LlamaConfig, device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    let d = cfg.rope_dim;
    let inv_freq: Vec<f32> = (0..d)
        .step_by(2)
        .map(|i| 1f32 / cfg.rope_theta.powf(i as f32 / d as f32))
        .collect();
    let n = inv_freq.len();
    let inv_freq = Tensor::from_vec(inv_freq, (1, n), device)?;
    let t = Tensor::arange(0u32, cfg.context_length as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((cfg.context_length, 1))?;
    let freqs = t.matmul(&inv_freq)?;
    Ok((freqs.cos()?, freqs.sin()?))
}

/// Additive causal mask `[q_len, pos + q_len]` (0 where allowed, −∞ above the diagonal), or
/// `None` for a single query, which may see everything before it.
fn causal_mask(q_len: usize, pos: usize, device: &Device) -> candle_core::Result<Option<Tensor>> {
    if q_len == 1 {
        return Ok(None);
    }
    let kv_len = pos + q_len;
    let mask: Vec<f32> = (0..q_len)
        .flat_map(|i| (0..kv_len).map(move |j| if j > pos + i { f32::NEG_INFINITY } else { 0.0 }))
        .collect();
    Tensor::from_vec(mask, (q_len, kv_len), device).map(Some)
}

/// Repeats each key/value head `n_rep` times so grouped-query heads line up with query heads
/// (query head `h` uses kv head `h / n_rep`).
fn repeat_kv(x: Tensor, n_rep: usize) -> candle_core::Result<Tensor> {
    if n_rep == 1 {
        return Ok(x);
    }
    let (b, n_kv, seq, hd) = x.dims4()?;
    Tensor::cat(&vec![&x; n_rep], 2)?.reshape((b, n_kv * n_rep, seq, hd))
}

/// Index of the largest logit (ties → the lowest index), i.e. greedy decoding.
pub fn argmax(logits: &Tensor) -> Result<u32, ModelError> {
    let v: Vec<f32> = logits.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let mut best = 0usize;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    Ok(best as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_is_causal_with_offset() -> candle_core::Result<()> {
        let m = causal_mask(2, 3, &Device::Cpu)?.expect("mask");
        let v: Vec<Vec<f32>> = m.to_vec2()?;
        assert_eq!(v[0][..4], [0.0; 4]);
        assert!(v[0][4].is_infinite());
        assert_eq!(v[1], vec![0.0; 5]);
        assert!(causal_mask(1, 7, &Device::Cpu)?.is_none());
        Ok(())
    }

    #[test]
    fn repeat_kv_maps_query_head_to_kv_head() -> candle_core::Result<()> {
        // 2 kv heads of one position, one dim: values 10, 20.
        let x = Tensor::new(&[10f32, 20.], &Device::Cpu)?.reshape((1, 2, 1, 1))?;
        let r = repeat_kv(x, 3)?;
        let v: Vec<f32> = r.flatten_all()?.to_vec1()?;
        assert_eq!(v, vec![10., 10., 10., 20., 20., 20.]);
        Ok(())
    }

    #[test]
    fn argmax_prefers_first_maximum() -> Result<(), ModelError> {
        let t = Tensor::new(&[1f32, 3., 3., -1.], &Device::Cpu)?;
        assert_eq!(argmax(&t)?, 1);
        Ok(())
    }
}
