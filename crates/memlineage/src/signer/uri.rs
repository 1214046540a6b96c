//! PKCS#11 URIs (RFC 7512): which module, which token, and where the PIN comes from.
//!
//! `pkcs11:token=memlineage?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=/run/pin`
//!
//! Path attributes (`;`-separated, RFC 7512 §2.3): `token` (the token label), `serial`,
//! `manufacturer`, `slot-id`; keys are found by their label, which is the principal's name
//! (`object` is therefore not taken: one URI serves every principal). Query attributes
//! (§2.4): `module-path` (required), and the PIN as `pin-source` (a file, or `file:` URI,
//! holding it) or `pin-value`; without either the PIN is read from the environment variable
//! `MEMLINEAGE_PKCS11_PIN`. Values are percent-decoded. Any other attribute is refused, so a
//! typing mistake fails the start instead of signing with another token than meant.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// The environment variable the PIN is read from when the URI names none.
pub const PIN_ENV: &str = "MEMLINEAGE_PKCS11_PIN";

/// Where the user PIN comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum PinSource {
    /// Given in the URI (`pin-value`).
    Value(String),
    /// A file holding it (`pin-source`); one trailing newline is ignored.
    File(PathBuf),
    /// The environment variable [`PIN_ENV`].
    Env,
}

/// A parsed PKCS#11 URI.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkcs11Uri {
    /// The PKCS#11 module (shared library) to load.
    pub module_path: PathBuf,
    /// The token label.
    pub token: Option<String>,
    /// The token's serial number.
    pub serial: Option<String>,
    /// The token's manufacturer.
    pub manufacturer: Option<String>,
    /// The slot id.
    pub slot_id: Option<u64>,
    /// Where the PIN comes from.
    pub pin: PinSource,
}

impl Pkcs11Uri {
    /// The PIN, read from where the URI says.
    pub fn read_pin(&self) -> Result<String, String> {
        match &self.pin {
            PinSource::Value(v) => Ok(v.clone()),
            PinSource::File(path) => std::fs::read_to_string(path)
                .map(|s| s.strip_suffix('\n').unwrap_or(&s).to_string())
                .map_err(|e| format!("cannot read the PIN from {}: {e}", path.display())),
            PinSource::Env => std::env::var(PIN_ENV).map_err(|_| {
                format!("no PIN: give `pin-source=FILE` in the URI, or set {PIN_ENV}")
            }),
        }
    }

    /// The URI without the PIN, for messages.
    pub fn describe(&self) -> String {
        let mut path = Vec::new();
        for (k, v) in [
            ("token", &self.token),
            ("serial", &self.serial),
            ("manufacturer", &self.manufacturer),
        ] {
            if let Some(v) = v {
                path.push(format!("{k}={v}"));
            }
        }
        if let Some(s) = self.slot_id {
            path.push(format!("slot-id={s}"));
        }
        format!(
            "PKCS#11 signer pkcs11:{}?module-path={}",
            path.join(";"),
            self.module_path.display()
        )
    }
}

impl fmt::Debug for Pkcs11Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl FromStr for Pkcs11Uri {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let rest = s
            .strip_prefix("pkcs11:")
            .ok_or_else(|| "a PKCS#11 URI starts with `pkcs11:`".to_string())?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut uri = Pkcs11Uri {
            module_path: PathBuf::new(),
            token: None,
            serial: None,
            manufacturer: None,
            slot_id: None,
            pin: PinSource::Env,
        };
        for attr in path.split(';').filter(|a| !a.is_empty()) {
            let (k, v) = split_attr(attr)?;
            match k {
                "token" => uri.token = Some(v),
                "serial" => uri.serial = Some(v),
                "manufacturer" => uri.manufacturer = Some(v),
                "slot-id" => {
                    uri.slot_id = Some(
                        v.parse()
                            .map_err(|_| format!("`slot-id={v}` is not a number"))?,
                    )
                }
                other => {
                    return Err(format!(
                        "the path attribute `{other}` is not supported (token, serial, manufacturer, slot-id; keys are found by the principal's name as their label)"
                    ));
                }
            }
        }
        let mut module = None;
        for attr in query.split('&').filter(|a| !a.is_empty()) {
            let (k, v) = split_attr(attr)?;
            match k {
                "module-path" => module = Some(PathBuf::from(v)),
                "pin-value" => uri.pin = PinSource::Value(v),
                "pin-source" => {
                    let file = v.strip_prefix("file:").unwrap_or(&v);
                    uri.pin = PinSource::File(PathBuf::from(file));
                }
                other => {
                    return Err(format!(
                        "the query attribute `{other}` is not supported (module-path, pin-source, pin-value)"
                    ));
                }
            }
        }
        uri.module_path = module.ok_or_else(|| {
            "the URI names no module: add `?module-path=/path/to/the/pkcs11/module.so`".to_string()
        })?;
        Ok(uri)
    }
}

fn split_attr(attr: &str) -> Result<(&str, String), String> {
    let (k, v) = attr
        .split_once('=')
        .ok_or_else(|| format!("`{attr}` is not an attribute `name=value`"))?;
    Ok((k, percent_decode(v)?))
}

/// Decodes `%XX` escapes (RFC 3986 §2.1), as RFC 7512 §2.3 requires of attribute values.
fn percent_decode(v: &str) -> Result<String, String> {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("`{v}`: a `%` is not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("`{v}` does not decode to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc7512_uris() {
        let u: Pkcs11Uri =
            "pkcs11:token=my%20hsm;slot-id=3?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin"
                .parse()
                .unwrap();
        assert_eq!(u.token.as_deref(), Some("my hsm"));
        assert_eq!(u.slot_id, Some(3));
        assert_eq!(
            u.module_path,
            PathBuf::from("/usr/lib/softhsm/libsofthsm2.so")
        );
        assert!(u.pin == PinSource::File("/run/pin".into()));
        let v: Pkcs11Uri = "pkcs11:token=t?module-path=/m.so&pin-value=1234"
            .parse()
            .unwrap();
        assert_eq!(v.read_pin().unwrap(), "1234");
        assert!(!format!("{v:?}").contains("1234"), "the PIN is never shown");
        assert!(!v.describe().contains("1234"));
        for bad in [
            "pkcs12:token=t?module-path=/m.so",
            "pkcs11:token=t",
            "pkcs11:object=agent?module-path=/m.so",
            "pkcs11:token=t?module-path=/m.so&pin=1",
            "pkcs11:token=%zz?module-path=/m.so",
            "pkcs11:slot-id=x?module-path=/m.so",
            "pkcs11:token?module-path=/m.so",
        ] {
            assert!(bad.parse::<Pkcs11Uri>().is_err(), "{bad}");
        }
    }
}
