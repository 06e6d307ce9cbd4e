//! `tare serve --store STORE [--listen ADDR]` (the team server, `crate::serve`) and its
//! tokens: `tare serve --store STORE token new|list|revoke`. Parses arguments, opens the
//! store, and hands over.

use crate::error::{exit, usage};
use crate::store::{self, tokens, Store};
use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare serve --store postgresql://tare:pw@db/tare --listen 0.0.0.0:8330 --allowed-host bench\n  tare serve --store .tare/history.sqlite token new ci-x86    # prints the token once\n  tare history add --server http://bench:8330 --token \"$TARE_TOKEN\" results.json\n\nSee docs/server.md for the API and the security model."
)]
pub struct ServeArgs {
    /// The store: an SQLite file or postgresql://user:pass@host:port/db (default: TARE_STORE,
    /// else .tare/history.sqlite in the git repository, else $XDG_DATA_HOME/tare/history.sqlite).
    #[arg(long, global = true, value_name = "URL|PATH|default")]
    store: Option<String>,
    /// Where to listen (HOST:PORT; port 0 picks a free one, printed at start).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8330")]
    listen: String,
    /// Reads need a valid token too (API: Authorization: Bearer; pages: open once with ?token=).
    #[arg(long)]
    read_token_required: bool,
    /// Largest request body (an upload): e.g. 64MiB.
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    max_upload: String,
    /// A name clients reach the server by (repeatable; NAME any port, NAME:PORT that port):
    /// requests with another Host are refused (421). Always allowed: the --listen address,
    /// localhost, 127.0.0.1 and [::1] with the port listened on.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_host: Vec<String>,
    /// How long a client has to send a request's head, and then its body (e.g. 30s, 1.5): a
    /// connection that sends nothing, or trickles, is closed after it (a body late: 408).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    request_timeout: String,
    /// Connections one client address may hold open at once; more are answered 429 and closed.
    #[arg(long, value_name = "N", default_value_t = crate::serve::CONNECTIONS_PER_CLIENT)]
    max_connections_per_client: usize,
    /// Serve HTTPS with this certificate (PEM, the chain with the server's first); needs
    /// --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// POST each new alert as JSON to this http:// or https:// URL: those of `POST
    /// /api/v1/check`, and of a check run after each upload that adds sessions (10 s timeout
    /// each, from a thread of its own; a failure is logged). The shape is in docs/store.md.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    #[command(subcommand)]
    command: Option<ServeCommand>,
}

#[derive(Subcommand, Debug)]
enum ServeCommand {
    /// Upload tokens: new NAME (prints the token once), list, revoke NAME.
    #[command(subcommand)]
    Token(TokenCommand),
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Make a token and print it (only its hash is stored: keep it now). It may write unless
    /// --read-only.
    New {
        /// A name for who uses it (e.g. ci-x86).
        #[arg(value_name = "NAME")]
        name: String,
        /// The token may only read (the pages and GET of the API, e.g. the login of
        /// --read-token-required): uploads, check and alert actions with it are refused (403).
        #[arg(long)]
        read_only: bool,
    },
    /// List the tokens: name, scope (write or read-only), made, revoked, last used.
    List,
    /// Revoke the token NAME: requests with it are refused from now on.
    Revoke {
        /// The name the token was made with (`token list` shows them).
        #[arg(value_name = "NAME")]
        name: String,
    },
}

fn open(spec: &str) -> Result<Store> {
    Store::open(spec).map_err(|e| usage(format!("{e:#}; check --store or TARE_STORE")))
}

pub fn serve(a: ServeArgs) -> Result<i32> {
    if let Some(url) = &a.webhook {
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(crate::error::usage(format!(
                "--webhook {url}: give an http:// or https:// URL"
            )));
        }
    }
    let spec = store::location(a.store.as_deref());
    match a.command {
        Some(ServeCommand::Token(t)) => {
            let mut st = open(&spec)?;
            match t {
                TokenCommand::New { name, read_only } => {
                    let token = tokens::create(&mut st.db, &name, &store::now(), read_only)
                        .map_err(|e| usage(format!("{e:#}")))?;
                    eprintln!(
                        "{} token '{name}' for {} (shown once; only its hash is stored):",
                        if read_only { "read-only" } else { "write" },
                        st.location
                    );
                    println!("{token}");
                }
                TokenCommand::List => {
                    let list = tokens::list(&mut st.db)?;
                    if list.is_empty() {
                        println!(
                            "no tokens in {}: make one with `tare serve --store {} token new NAME`",
                            st.location, st.location
                        );
                    }
                    for t in list {
                        println!(
                            "{}\t{}\tmade {}\t{}\t{}",
                            t.name,
                            if t.read_only { "read-only" } else { "write" },
                            t.created_at,
                            t.revoked_at
                                .map(|r| format!("revoked {r}"))
                                .unwrap_or_else(|| "live".into()),
                            t.last_used
                                .map(|r| format!("last used {r}"))
                                .unwrap_or_else(|| "never used".into())
                        );
                    }
                }
                TokenCommand::Revoke { name } => {
                    if !tokens::revoke(&mut st.db, &name, &store::now())? {
                        return Err(usage(format!(
                            "no live token named '{name}' in {}: see `tare serve --store {} token list`",
                            st.location, st.location
                        )));
                    }
                    println!("token '{name}' revoked");
                }
            }
            Ok(exit::OK)
        }
        None => {
            let max = crate::units::parse_bytes(&a.max_upload)
                .map_err(|e| usage(format!("--max-upload: {e}")))?;
            let timeout = crate::units::parse_duration(&a.request_timeout)
                .map_err(|e| usage(format!("--request-timeout: {e}")))?;
            if a.max_connections_per_client == 0 {
                return Err(usage(
                    "--max-connections-per-client 0 would refuse every client: give 1 or more",
                ));
            }
            let tls = match (&a.tls_cert, &a.tls_key) {
                (Some(c), Some(k)) => Some(crate::serve::tls_config(c, k)?),
                _ => None,
            };
            let mut st = open(&spec)?;
            tokens::ensure(&mut st.db)?;
            let readers = (0..crate::serve::READERS)
                .map(|_| open(&spec))
                .collect::<Result<Vec<_>>>()?;
            crate::serve::serve(
                st,
                readers,
                crate::serve::Options {
                    listen: a.listen,
                    read_token_required: a.read_token_required,
                    max_body: max.min(usize::MAX as u64) as usize,
                    allowed_hosts: a.allowed_host,
                    request_timeout: timeout,
                    max_connections_per_client: a.max_connections_per_client,
                    tls,
                    webhook: a.webhook,
                },
            )?;
            Ok(exit::OK)
        }
    }
}
