//! A PKCS#11 token as a [`Signer`]: Ed25519 keys generated in the token, signing with
//! `CKM_EDDSA` inside it (PKCS#11 v3.0 §2.3.14, the mechanism's pure Ed25519 without
//! parameters), through `cryptoki` (the Parsec project's bindings).
//!
//! A principal's key is the pair of objects of key type `CKK_EC_EDWARDS` labelled with the
//! principal's name (`CKA_LABEL`), the public key's `CKA_EC_POINT` giving the 32-byte key and
//! its `CKA_ID` naming the private key. The secret key never enters this process: only
//! sensitive, non-extractable private keys are used (`CKA_SENSITIVE` true, `CKA_EXTRACTABLE`
//! false; a key that could be read out is refused), and the token returns signatures only.
//! (A module loaded into the process, as SoftHSM2 is, keeps the key in its own memory; a
//! hardware token or a remoting module keeps it outside.)

use super::uri::Pkcs11Uri;
use super::{Signer, SignerFailure, SignerProblem};
use crate::error::Error;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use ed25519_dalek::{Signature, VerifyingKey};
use memlineage_core::PrincipalName;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// A PKCS#11 token holding principals' Ed25519 keys.
pub struct Pkcs11Signer {
    ctx: Pkcs11,
    slot: Slot,
    describe: String,
    /// The session that logged in, kept open: a login lasts while any session of the
    /// application with the token is open (PKCS#11 v2.40 §5.6, `C_Login`).
    _login: Mutex<Session>,
    /// Idle sessions; one is taken per call, so calls on several threads do not share one.
    idle: Mutex<Vec<Session>>,
    /// Private key handles found, by principal and public key.
    found: Mutex<HashMap<(PrincipalName, [u8; 32]), ObjectHandle>>,
}

/// One context per module in a process: `C_Initialize` is once per process and module.
fn context(module: &PathBuf) -> Result<Pkcs11, String> {
    static CONTEXTS: OnceLock<Mutex<HashMap<PathBuf, Pkcs11>>> = OnceLock::new();
    let mut map = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| "a PKCS#11 context lock was poisoned".to_string())?;
    if let Some(ctx) = map.get(module) {
        return Ok(ctx.clone());
    }
    let ctx = Pkcs11::new(module)
        .map_err(|e| format!("cannot load the PKCS#11 module {}: {e}", module.display()))?;
    match ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => {
            return Err(format!(
                "the PKCS#11 module {} did not initialise: {e}",
                module.display()
            ));
        }
    }
    map.insert(module.clone(), ctx.clone());
    Ok(ctx)
}

impl Pkcs11Signer {
    /// Loads the module, finds the token, and logs in with the user PIN.
    pub fn open(uri: &Pkcs11Uri) -> Result<Pkcs11Signer, Error> {
        let describe = uri.describe();
        let fail = |problem: SignerProblem| -> Error {
            SignerFailure {
                principal: "-".into(),
                signer: describe.clone(),
                problem,
            }
            .into()
        };
        let ctx = context(&uri.module_path).map_err(|e| fail(SignerProblem::Failed(e)))?;
        let slot = find_slot(&ctx, uri).map_err(|e| fail(SignerProblem::Failed(e)))?;
        let pin = uri.read_pin().map_err(|e| fail(SignerProblem::Login(e)))?;
        let session = ctx
            .open_ro_session(slot)
            .map_err(|e| fail(SignerProblem::Failed(format!("cannot open a session: {e}"))))?;
        match session.login(UserType::User, Some(&AuthPin::new(pin.into()))) {
            Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {}
            Err(CkError::Pkcs11(RvError::PinIncorrect, _)) => {
                return Err(fail(SignerProblem::Login("the PIN is incorrect".into())));
            }
            Err(e) => return Err(fail(SignerProblem::Login(e.to_string()))),
        }
        Ok(Pkcs11Signer {
            ctx,
            slot,
            describe,
            _login: Mutex::new(session),
            idle: Mutex::new(Vec::new()),
            found: Mutex::new(HashMap::new()),
        })
    }

    /// Runs `f` on an idle session (or a new one), returning the session to the pool unless
    /// the token said it is gone.
    fn with_session<T>(
        &self,
        f: impl FnOnce(&Session) -> Result<T, CkError>,
    ) -> Result<T, SignerProblem> {
        let taken = self.idle.lock().ok().and_then(|mut v| v.pop());
        let session = match taken {
            Some(s) => s,
            None => self
                .ctx
                .open_ro_session(self.slot)
                .map_err(|e| SignerProblem::Failed(format!("cannot open a session: {e}")))?,
        };
        let result = f(&session);
        let gone = matches!(
            &result,
            Err(CkError::Pkcs11(
                RvError::SessionHandleInvalid
                    | RvError::SessionClosed
                    | RvError::TokenNotPresent
                    | RvError::DeviceRemoved
                    | RvError::DeviceError,
                _
            ))
        );
        if !gone && let Ok(mut idle) = self.idle.lock() {
            idle.push(session);
        }
        result.map_err(problem)
    }

    /// The public keys labelled `principal`, with their `CKA_ID`s.
    fn keys_of(
        &self,
        principal: &PrincipalName,
    ) -> Result<Vec<(VerifyingKey, Vec<u8>)>, SignerProblem> {
        let label = principal.as_str().as_bytes().to_vec();
        let found = self.with_session(|s| {
            let handles = s.find_objects(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::Label(label.clone()),
            ])?;
            let mut out = Vec::with_capacity(handles.len());
            for h in handles {
                out.push(s.get_attributes(h, &[AttributeType::EcPoint, AttributeType::Id])?);
            }
            Ok(out)
        })?;
        let mut keys = Vec::new();
        for attrs in found {
            let (mut point, mut id) = (None, Vec::new());
            for a in attrs {
                match a {
                    Attribute::EcPoint(p) => point = Some(p),
                    Attribute::Id(i) => id = i,
                    _ => {}
                }
            }
            // An Ed25519 key that is not 32 bytes (an Ed448 key of the same key type) is not
            // a key this store can register: skipped.
            if let Some(key) = point.as_deref().and_then(ed25519_point) {
                keys.push((key, id));
            }
        }
        Ok(keys)
    }

    /// The private key of `principal` whose public key is `key`.
    fn private_key(
        &self,
        principal: &PrincipalName,
        key: &VerifyingKey,
    ) -> Result<ObjectHandle, SignerProblem> {
        let cache_key = (principal.clone(), key.to_bytes());
        if let Some(h) = self
            .found
            .lock()
            .ok()
            .and_then(|m| m.get(&cache_key).copied())
        {
            return Ok(h);
        }
        let id = self
            .keys_of(principal)?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, id)| id)
            .ok_or(SignerProblem::NoKey)?;
        let mut template = vec![
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_EDWARDS),
            Attribute::Label(principal.as_str().as_bytes().to_vec()),
        ];
        if !id.is_empty() {
            template.push(Attribute::Id(id));
        }
        let (handle, attrs) = self
            .with_session(|s| {
                let Some(h) = s.find_objects(&template)?.into_iter().next() else {
                    return Ok(None);
                };
                let attrs =
                    s.get_attributes(h, &[AttributeType::Sensitive, AttributeType::Extractable])?;
                Ok(Some((h, attrs)))
            })?
            .ok_or(SignerProblem::NoKey)?;
        let readable = attrs.iter().any(|a| {
            matches!(
                a,
                Attribute::Sensitive(false) | Attribute::Extractable(true)
            )
        });
        if readable {
            return Err(SignerProblem::Config(format!(
                "the private key labelled `{principal}` can be read out of the token (CKA_SENSITIVE false or CKA_EXTRACTABLE true); generate it inside the token as sensitive and not extractable"
            )));
        }
        if let Ok(mut m) = self.found.lock() {
            m.insert(cache_key, handle);
        }
        Ok(handle)
    }
}

impl Signer for Pkcs11Signer {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn public_keys(&self, principal: &PrincipalName) -> Result<Vec<VerifyingKey>, SignerProblem> {
        Ok(self
            .keys_of(principal)?
            .into_iter()
            .map(|(k, _)| k)
            .collect())
    }

    fn sign(
        &self,
        principal: &PrincipalName,
        key: &VerifyingKey,
        message: &[u8],
    ) -> Result<Signature, SignerProblem> {
        let handle = self.private_key(principal, key)?;
        let mechanism = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure));
        let signed = self.with_session(|s| s.sign(&mechanism, handle, message));
        let bytes = match signed {
            Ok(b) => b,
            Err(e) => {
                // The handle may name a key that was deleted: look it up again next time.
                if let Ok(mut m) = self.found.lock() {
                    m.remove(&(principal.clone(), key.to_bytes()));
                }
                return Err(e);
            }
        };
        let raw: [u8; 64] = bytes.as_slice().try_into().map_err(|_| {
            SignerProblem::Failed(format!(
                "the token answered a {}-byte signature (Ed25519 signatures are 64 bytes)",
                bytes.len()
            ))
        })?;
        Ok(Signature::from_bytes(&raw))
    }
}

/// The slot of the token the URI names (the first match).
fn find_slot(ctx: &Pkcs11, uri: &Pkcs11Uri) -> Result<Slot, String> {
    let slots = ctx
        .get_slots_with_token()
        .map_err(|e| format!("cannot list the token slots: {e}"))?;
    let mut seen = Vec::new();
    for slot in slots {
        let info = ctx
            .get_token_info(slot)
            .map_err(|e| format!("cannot read the token of slot {}: {e}", slot.id()))?;
        let (label, serial, maker) = (
            info.label().trim_end().to_string(),
            info.serial_number().trim_end().to_string(),
            info.manufacturer_id().trim_end().to_string(),
        );
        let fits = uri.token.as_ref().is_none_or(|t| *t == label)
            && uri.serial.as_ref().is_none_or(|s| *s == serial)
            && uri.manufacturer.as_ref().is_none_or(|m| *m == maker)
            && uri.slot_id.is_none_or(|i| i == slot.id());
        if fits {
            return Ok(slot);
        }
        seen.push(format!("`{label}` (serial {serial}, slot {})", slot.id()));
    }
    Err(format!(
        "no token matches the URI; the module has {}",
        if seen.is_empty() {
            "no token".to_string()
        } else {
            seen.join(", ")
        }
    ))
}

/// A `CKA_EC_POINT` of an Ed25519 key: the 32-byte key, DER-wrapped as an OCTET STRING
/// (`04 20 …`, what PKCS#11 v3.0 §2.3.6 specifies and SoftHSM2 stores) or bare.
fn ed25519_point(p: &[u8]) -> Option<VerifyingKey> {
    let raw = match p {
        [0x04, 0x20, rest @ ..] if rest.len() == 32 => rest,
        _ if p.len() == 32 => p,
        _ => return None,
    };
    memlineage_core::keys::public_from_bytes(raw).ok()
}

/// A PKCS#11 error as a signer problem.
fn problem(e: CkError) -> SignerProblem {
    match e {
        CkError::Pkcs11(RvError::UserNotLoggedIn | RvError::PinExpired | RvError::PinLocked, _) => {
            SignerProblem::Login(e.to_string())
        }
        CkError::Pkcs11(RvError::KeyHandleInvalid | RvError::ObjectHandleInvalid, _) => {
            SignerProblem::Failed(format!("the key is no longer in the token: {e}"))
        }
        other => SignerProblem::Failed(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec_points() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]).verifying_key();
        let mut der = vec![0x04, 0x20];
        der.extend_from_slice(key.as_bytes());
        assert_eq!(ed25519_point(&der), Some(key));
        assert_eq!(ed25519_point(key.as_bytes()), Some(key));
        assert_eq!(ed25519_point(&der[..33]), None);
        assert_eq!(ed25519_point(&[0u8; 57]), None);
    }
}
