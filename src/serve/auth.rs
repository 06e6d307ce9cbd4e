//! Who may do what. Writes (uploads, `check`, alert actions) need `Authorization: Bearer TOKEN`
//! with a live write token of the store (`tare serve token new`; a `--read-only` token is
//! refused with 403); tokens are read from the store on every request,
//! so a token revoked while the server runs is refused at once. Reads are open unless
//! `--read-token-required`: then a bearer token, or the `tare_token` cookie that opening any
//! page with `?token=TOKEN` sets (HttpOnly, SameSite=Strict). Alert actions from the pages need
//! the per-process secret embedded in the page, sent back in the `X-Tare-CSRF` header (a
//! custom header another site's form or script cannot send without a CORS preflight, which
//! this server never grants), or a bearer token.

use super::ApiError;
use crate::store::{tokens, Store};
use axum::http::{HeaderMap, StatusCode};
use subtle::ConstantTimeEq;

/// The header alert actions from the pages carry.
pub const CSRF_HEADER: &str = "x-tare-csrf";
/// The cookie that holds a read token for the pages.
pub const COOKIE: &str = "tare_token";

fn unauthorized(msg: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, msg)
}

/// The bearer token of the request, if any.
pub fn bearer(h: &HeaderMap) -> Option<&str> {
    h.get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

fn cookie(h: &HeaderMap) -> Option<&str> {
    h.get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .next()
}

/// The name of the live token `token` and whether it may write, or why not.
fn valid(st: &mut Store, token: &str) -> Result<(String, bool), ApiError> {
    let live = tokens::live(&mut st.db)?;
    match tokens::check(&live, token) {
        Some(l) => {
            let (name, write) = (l.name.clone(), l.write);
            tokens::touch(&mut st.db, &name, &crate::store::now());
            Ok((name, write))
        }
        None => Err(unauthorized(
            "the token is not valid (mistyped, or revoked): ask for a new one (`tare serve --store STORE token new NAME`)",
        )),
    }
}

/// The 403 of a read-only token `name` on a request that changes the store.
fn read_only(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!("the token '{name}' may only read: this request changes the store and needs a write token (`tare serve --store STORE token new NAME`, without --read-only)"),
    )
}

/// A valid token that may write: its name.
fn writer(st: &mut Store, token: &str) -> Result<String, ApiError> {
    match valid(st, token)? {
        (name, true) => Ok(name),
        (name, false) => Err(read_only(&name)),
    }
}

/// A write: the name of the request's valid bearer token, which may write.
pub fn write(st: &mut Store, h: &HeaderMap) -> Result<String, ApiError> {
    match bearer(h) {
        Some(t) => writer(st, t),
        None => Err(unauthorized(
            "no token: send `Authorization: Bearer TOKEN` (make one with `tare serve --store STORE token new NAME`)",
        )),
    }
}

/// A read: allowed when reads are open, else with a valid bearer token or cookie.
pub fn read(st: &mut Store, h: &HeaderMap, required: bool) -> Result<(), ApiError> {
    if !required {
        return Ok(());
    }
    match bearer(h).or_else(|| cookie(h)) {
        Some(t) => valid(st, t).map(|_| ()),
        None => Err(unauthorized(
            "this server needs a token to read: send `Authorization: Bearer TOKEN`, or open the page once with ?token=TOKEN",
        )),
    }
}

/// An alert action: a valid bearer token that may write, or a reader's request carrying the
/// page's secret — when reads need a token, the reader's token (cookie) must be one that may
/// write: the read login is not a write credential.
pub fn action(
    st: &mut Store,
    h: &HeaderMap,
    required: bool,
    csrf: &str,
) -> Result<String, ApiError> {
    if bearer(h).is_some() {
        return write(st, h);
    }
    let sent = h
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !bool::from(sent.as_bytes().ct_eq(csrf.as_bytes())) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "an alert action needs `Authorization: Bearer TOKEN`, or the page's X-Tare-CSRF secret: reload the page and try again",
        ));
    }
    if required {
        match cookie(h) {
            Some(t) => {
                writer(st, t)?;
            }
            None => read(st, h, required)?,
        }
    }
    Ok("dashboard".into())
}

/// A `?token=` of a page request when it is a valid token: the cookie to set.
pub fn login_cookie(st: &mut Store, token: &str) -> Result<String, ApiError> {
    valid(st, token)?;
    Ok(format!(
        "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    ))
}
