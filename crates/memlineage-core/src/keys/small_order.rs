//! Whether a 32-byte point encoding denotes a point of small order, from the bytes alone.
//!
//! Batch verification rejects signatures whose `R` has small order (`keys::verify_batch`).
//! Decompressing `R` to ask costs a field square root — and the batch equation decompresses
//! `R` again — so the check was a tenth of a retrieval. The points of small order on
//! edwards25519 are exactly the eight points of the 8-torsion subgroup, and the encodings
//! that decompress to them (RFC 8032 §5.1.3, as `curve25519-dalek` implements it: `y` is read
//! modulo p, so `y` and `y + p` decode alike when `y + p < 2^255`, and the sign bit is applied
//! to `x` even when `x = 0`) are a fixed set of fourteen: the eight canonical encodings and six
//! alternative ones. That is the set C2SP's CCTV Ed25519 vectors call "eight plus six
//! alternative encodings" of the low-order points (`ed25519/README.md`), the blocklist of
//! libsodium's `ge25519_has_small_order`, and the small-order and non-canonical cases of
//! Chalkias, Garillot and Nikolaenko, "Taming the many EdDSAs" (SSR 2020, eprint 2020/1244).
//!
//! In the table each encoding is listed by its `y` bytes (bit 255, the sign of `x`, cleared);
//! both signs of each are small-order encodings. The tests derive the table from
//! `curve25519-dalek`'s 8-torsion points and check, for every table entry and on random and
//! crafted bytes, that this check answers exactly what decompression answers.

/// The `y` encodings (sign bit cleared) of the points of small order: seven values, each with
/// either sign bit, so fourteen encodings.
const SMALL_ORDER_Y: [[u8; 32]; 7] = [
    // y = 0: the two points of order 4, (±√−1, 0).
    [0; 32],
    // y = 1: the identity (0, 1), order 1.
    one_plus(0),
    // The two y values of the four points of order 8.
    hex32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    hex32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    // y = p − 1 = −1: the point (0, −1) of order 2.
    p_plus(-1),
    // y = p: a non-canonical encoding of y = 0 (order 4).
    p_plus(0),
    // y = p + 1: a non-canonical encoding of y = 1 (the identity).
    p_plus(1),
];

/// True exactly when `encoding` decompresses to a point of small order (order 1, 2, 4 or 8).
/// Bytes that do not decompress at all are not small-order encodings (the caller's
/// decompression refuses them).
pub(crate) fn is_small_order_encoding(encoding: &[u8; 32]) -> bool {
    let mut y = *encoding;
    y[31] &= 0x7f;
    SMALL_ORDER_Y.contains(&y)
}

/// The little-endian encoding of `1 + k` (k < 255).
const fn one_plus(k: u8) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0] = 1 + k;
    b
}

/// The little-endian encoding of p + `d` for p = 2^255 − 19 and −1 ≤ `d` ≤ 1.
const fn p_plus(d: i8) -> [u8; 32] {
    let mut b = [0xff; 32];
    b[31] = 0x7f;
    b[0] = (0xed_i16 + d as i16) as u8;
    b
}

/// 64 hex digits as 32 bytes, at compile time.
const fn hex32(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lowercase hex digit"),
        }
    }
    let s = s.as_bytes();
    assert!(s.len() == 64, "64 hex digits");
    let mut b = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        b[i] = (nibble(s[2 * i]) << 4) | nibble(s[2 * i + 1]);
        i += 1;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
    use curve25519_dalek::edwards::CompressedEdwardsY;
    use curve25519_dalek::scalar::Scalar;
    use proptest::prelude::*;

    /// What the check replaces: decompress, then ask the point.
    fn by_decompression(bytes: &[u8; 32]) -> bool {
        CompressedEdwardsY(*bytes)
            .decompress()
            .is_some_and(|p| p.is_small_order())
    }

    /// `y + p` when it still fits in 255 bits (the alternative encoding of `y`).
    fn plus_p(y: &[u8; 32]) -> Option<[u8; 32]> {
        let p = p_plus(0);
        let mut out = [0u8; 32];
        let mut carry = 0u16;
        for i in 0..32 {
            let s = u16::from(y[i]) + u16::from(p[i]) + carry;
            out[i] = s as u8;
            carry = s >> 8;
        }
        (carry == 0 && out[31] & 0x80 == 0).then_some(out)
    }

    /// Every encoding that decompresses to one of the eight small-order points: each point's
    /// `y`, and `y + p` where it fits, each with both sign bits.
    fn derived_encodings() -> Vec<[u8; 32]> {
        let mut out = Vec::new();
        for point in EIGHT_TORSION {
            let mut y = point.compress().to_bytes();
            y[31] &= 0x7f;
            for y in std::iter::once(y).chain(plus_p(&y)) {
                for sign in [0u8, 0x80] {
                    let mut e = y;
                    e[31] |= sign;
                    out.push(e);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn the_table_is_the_eight_torsion_points_with_their_alternative_encodings() {
        let derived = derived_encodings();
        assert_eq!(derived.len(), 14, "eight plus six alternative encodings");
        let mut table: Vec<[u8; 32]> = SMALL_ORDER_Y
            .iter()
            .flat_map(|y| {
                let mut neg = *y;
                neg[31] |= 0x80;
                [*y, neg]
            })
            .collect();
        table.sort_unstable();
        assert_eq!(table, derived);
    }

    #[test]
    fn every_small_order_encoding_is_known_and_decompresses_to_small_order() {
        // Known answers: each of the fourteen, by name, against decompression.
        let named: [(&str, &str); 14] = [
            (
                "y=0, order 4",
                "0000000000000000000000000000000000000000000000000000000000000000",
            ),
            (
                "y=0, sign set, order 4",
                "0000000000000000000000000000000000000000000000000000000000000080",
            ),
            (
                "identity",
                "0100000000000000000000000000000000000000000000000000000000000000",
            ),
            (
                "identity, sign set",
                "0100000000000000000000000000000000000000000000000000000000000080",
            ),
            (
                "order 8",
                "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
            ),
            (
                "order 8, sign set",
                "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
            ),
            (
                "order 8",
                "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
            ),
            (
                "order 8, sign set",
                "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
            ),
            (
                "y=-1, order 2",
                "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            ),
            (
                "y=-1, sign set, order 2",
                "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            ),
            (
                "y=p (non-canonical 0), order 4",
                "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            ),
            (
                "y=p (non-canonical 0), sign set, order 4",
                "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            ),
            (
                "y=p+1 (non-canonical identity)",
                "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            ),
            (
                "y=p+1 (non-canonical identity), sign set",
                "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            ),
        ];
        for (name, hex) in named {
            let e: [u8; 32] = hex::decode(hex).unwrap().try_into().unwrap();
            assert!(is_small_order_encoding(&e), "{name}");
            assert!(by_decompression(&e), "{name} decompresses to small order");
        }
    }

    #[test]
    fn crafted_neighbours_agree_with_decompression() {
        let mut crafted: Vec<[u8; 32]> = Vec::new();
        for e in derived_encodings() {
            // Every single-bit flip of every small-order encoding.
            for bit in 0..256 {
                let mut f = e;
                f[bit / 8] ^= 1 << (bit % 8);
                crafted.push(f);
            }
        }
        // The other non-canonical y values (p + 2 .. p + 18) and the top of the field.
        for d in 2..=18u8 {
            let mut e = p_plus(0);
            e[0] = 0xed + d;
            crafted.push(e);
        }
        crafted.push([0xff; 32]);
        // Points with a torsion component and a large-order one: not small order.
        let big = ED25519_BASEPOINT_POINT * Scalar::from(0x1234_5678u64);
        for t in EIGHT_TORSION {
            crafted.push((big + t).compress().to_bytes());
            crafted.push(big.compress().to_bytes());
        }
        for e in &crafted {
            assert_eq!(is_small_order_encoding(e), by_decompression(e), "{e:02x?}");
        }
    }

    proptest! {
        #[test]
        fn random_bytes_agree_with_decompression(bytes in any::<[u8; 32]>()) {
            prop_assert_eq!(is_small_order_encoding(&bytes), by_decompression(&bytes));
        }

        #[test]
        fn random_points_plus_torsion_agree_with_decompression(k in any::<u64>(), t in 0usize..8) {
            let p = ED25519_BASEPOINT_POINT * Scalar::from(k) + EIGHT_TORSION[t];
            let e = p.compress().to_bytes();
            prop_assert_eq!(is_small_order_encoding(&e), by_decompression(&e));
            // k = 0 leaves the torsion point itself.
            prop_assert_eq!(is_small_order_encoding(&e), k == 0);
        }
    }
}
