//! Upload tokens of `tare serve`: named, stored as a SHA-256 hash (the token itself is shown
//! once, when made), checked in constant time, revoked by name. The `tokens` table is created
//! here when missing (`CREATE TABLE IF NOT EXISTS`), apart from the versioned schema: a store
//! that never served has none, and older tares ignore it. A token may write (the default) or
//! only read (`token new NAME --read-only`: the read login of `--read-token-required`); the
//! `scope` column is added to a table made before it, its tokens keeping write rights.

use super::db::{Db, Val};
use anyhow::{bail, Result};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a token looks like: this prefix, then 64 hex digits (256 random bits).
pub const PREFIX: &str = "tare_";

/// One stored token (never the token itself).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenInfo {
    pub name: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
    pub last_used: Option<String>,
    /// Only reads: refused for every request that changes the store.
    pub read_only: bool,
}

/// A live token as the server checks it: its name, stored hash and whether it may write.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    pub name: String,
    pub hash: String,
    pub write: bool,
}

/// The `scope` of a token that may write, and of one that only reads.
const WRITE: &str = "write";
const READ: &str = "read";

/// Creates the table when missing, and adds the `scope` column to a table made before it
/// (its tokens keep write rights: the column's default).
pub fn ensure(db: &mut Db) -> Result<()> {
    db.batch(
        "CREATE TABLE IF NOT EXISTS tokens (name TEXT PRIMARY KEY, hash TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT, last_used TEXT, scope TEXT NOT NULL DEFAULT 'write')",
    )?;
    let has_scope = |db: &mut Db| {
        db.query("SELECT scope FROM tokens WHERE 1 = 0", &[])
            .is_ok()
    };
    if !has_scope(db) {
        let added = db.batch("ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'write'");
        // Another process may have added it at the same moment.
        if let Err(e) = added {
            if !has_scope(db) {
                return Err(e.context("adding the scope column to the tokens table"));
            }
        }
    }
    Ok(())
}

/// The stored form of a token: its SHA-256 in hex.
pub fn hash(token: &str) -> String {
    let d = Sha256::digest(token.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
    {
        bail!(
            "token name '{name}': use 1 to 64 letters, digits, '-', '_', '.' or '@' (e.g. ci-x86)"
        );
    }
    Ok(())
}

/// Makes a token named `name` (that may only read when `read_only`) and returns it (the only
/// time it is seen). A revoked token's name may be used again; a live one's may not.
pub fn create(db: &mut Db, name: &str, now: &str, read_only: bool) -> Result<String> {
    check_name(name)?;
    ensure(db)?;
    let live = db.query(
        "SELECT revoked_at FROM tokens WHERE name = ?",
        &[Val::text(name)],
    )?;
    if let Some(r) = live.first() {
        if r[0].as_str().is_none() {
            bail!("a token named '{name}' exists: revoke it first (`token revoke {name}`) or choose another name");
        }
    }
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    let token = format!(
        "{PREFIX}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    db.begin_write()?;
    let r = (|| -> Result<()> {
        db.exec("DELETE FROM tokens WHERE name = ?", &[Val::text(name)])?;
        db.exec(
            "INSERT INTO tokens (name, hash, created_at, scope) VALUES (?, ?, ?, ?)",
            &[
                Val::text(name),
                Val::text(hash(&token)),
                Val::text(now),
                Val::text(if read_only { READ } else { WRITE }),
            ],
        )?;
        Ok(())
    })();
    match r {
        Ok(()) => db.batch("COMMIT")?,
        Err(e) => {
            let _ = db.batch("ROLLBACK");
            return Err(e);
        }
    }
    Ok(token)
}

/// Every token, by name.
pub fn list(db: &mut Db) -> Result<Vec<TokenInfo>> {
    ensure(db)?;
    Ok(db
        .query(
            "SELECT name, created_at, revoked_at, last_used, scope FROM tokens ORDER BY name",
            &[],
        )?
        .into_iter()
        .map(|r| {
            let mut r = r.into_iter();
            let mut t = || r.next().and_then(Val::into_string);
            TokenInfo {
                name: t().unwrap_or_default(),
                created_at: t().unwrap_or_default(),
                revoked_at: t(),
                last_used: t(),
                read_only: t().as_deref() == Some(READ),
            }
        })
        .collect())
}

/// Revokes the live token `name`; false when there is none.
pub fn revoke(db: &mut Db, name: &str, now: &str) -> Result<bool> {
    ensure(db)?;
    Ok(db.exec(
        "UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
        &[Val::text(now), Val::text(name)],
    )? > 0)
}

/// The live tokens' names, hashes and scopes, read on every request the server checks (the
/// table exists: `tare serve` calls [`ensure`] at start). Any scope but `read` may write.
pub fn live(db: &mut Db) -> Result<Vec<Live>> {
    Ok(db
        .query(
            "SELECT name, hash, scope FROM tokens WHERE revoked_at IS NULL ORDER BY name",
            &[],
        )?
        .into_iter()
        .map(|r| {
            let mut r = r.into_iter();
            let mut t = || r.next().and_then(Val::into_string).unwrap_or_default();
            Live {
                name: t(),
                hash: t(),
                write: t() != READ,
            }
        })
        .collect())
}

/// The live token `token` is, comparing its hash with every live one in constant time (no
/// early exit: the time does not say how much of a hash matched).
pub fn check<'a>(live: &'a [Live], token: &str) -> Option<&'a Live> {
    let h = hash(token);
    let mut found = None;
    for l in live {
        if bool::from(l.hash.as_bytes().ct_eq(h.as_bytes())) {
            found = Some(l);
        }
    }
    found
}

/// Records when a token was last used (best effort: a failure is not the request's, and on
/// SQLite it does not wait while another connection writes: a read never waits behind an
/// upload for it).
pub fn touch(db: &mut Db, name: &str, now: &str) {
    let _ = db.exec_nowait(
        "UPDATE tokens SET last_used = ? WHERE name = ?",
        &[Val::text(now), Val::text(name)],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stored_hashed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open_sqlite(&dir.path().join("t.sqlite")).unwrap();
        let t = create(&mut db, "ci", "now", false).unwrap();
        assert!(t.starts_with(PREFIX) && t.len() == PREFIX.len() + 64);
        assert!(create(&mut db, "ci", "now", false).is_err());
        assert!(create(&mut db, "bad name", "now", false).is_err());
        let stored = db.query("SELECT hash FROM tokens", &[]).unwrap();
        assert_ne!(stored[0][0].as_str(), Some(t.as_str()));
        let l = live(&mut db).unwrap();
        let found = check(&l, &t).unwrap();
        assert_eq!((found.name.as_str(), found.write), ("ci", true));
        assert_eq!(check(&l, "tare_00"), None);
        assert!(revoke(&mut db, "ci", "later").unwrap());
        assert!(!revoke(&mut db, "ci", "later").unwrap());
        assert!(live(&mut db).unwrap().is_empty());
        // The name of a revoked token may be used again, with a new token.
        let t2 = create(&mut db, "ci", "now", false).unwrap();
        assert_ne!(t, t2);
        assert_eq!(list(&mut db).unwrap().len(), 1);
        // A read-only token reads as one.
        let r = create(&mut db, "viewer", "now", true).unwrap();
        let l = live(&mut db).unwrap();
        assert!(!check(&l, &r).unwrap().write);
        assert!(list(&mut db)
            .unwrap()
            .iter()
            .any(|t| t.name == "viewer" && t.read_only));
    }

    #[test]
    fn a_table_made_before_scopes_gets_one_and_its_tokens_keep_writing() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open_sqlite(&dir.path().join("t.sqlite")).unwrap();
        db.batch("CREATE TABLE tokens (name TEXT PRIMARY KEY, hash TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT, last_used TEXT)").unwrap();
        db.exec(
            "INSERT INTO tokens (name, hash, created_at) VALUES ('old', ?, 'then')",
            &[Val::text(hash("tare_old"))],
        )
        .unwrap();
        ensure(&mut db).unwrap();
        ensure(&mut db).unwrap();
        let l = live(&mut db).unwrap();
        assert!(check(&l, "tare_old").unwrap().write);
        create(&mut db, "viewer", "now", true).unwrap();
        assert_eq!(live(&mut db).unwrap().iter().filter(|t| t.write).count(), 1);
    }
}
