//! Request heads, made from parts written once per endpoint: the request line of the chat
//! route, `host`, `user-agent`, `content-type`, the API key's `authorization` and the
//! configured headers (`endpoint.headers`) never change, so a request adds only what is its
//! own (`accept` for a stream, its session id, its length). agentload's own header names are
//! lowercase, as hyper wrote them before; configured ones go as configured.
//!
//! [`ClientStyle::AgentperfLocal`] writes agentperf-local 0.3.4's chat headers instead:
//! `accept: text/event-stream` and `accept-encoding: identity` on every request, no session
//! id (its own `user-agent` aside: agentload names itself).

use super::connection::{Endpoint, EndpointError};

/// The `user-agent` header's value.
const USER_AGENT: &str = concat!("agentload/", env!("CARGO_PKG_VERSION"));

/// Headers agentload writes itself (or that would change how the body is framed): a
/// configured header may not set them.
const OWN_HEADERS: [&str; 11] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "accept",
];

/// Whose client a [`super::ChatClient`] behaves as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientStyle {
    /// agentload's (the reference's): `accept: text/event-stream` for a stream, the
    /// session id in the session header; a stream must end with a `finish_reason` and
    /// `[DONE]`.
    #[default]
    Reference,
    /// agentperf-local 0.3.4's: `accept: text/event-stream` and `accept-encoding:
    /// identity` always, no session header; a stream that ends cleanly is an answer
    /// without `[DONE]` or a `finish_reason` (agentperf-local's check of the answer
    /// judges it: `agentload_engine`'s `agentperf` module).
    AgentperfLocal,
}

/// The parts of every request head to one endpoint (no `Debug`: they hold the API key and
/// the configured headers).
pub(super) struct Heads {
    /// `POST` of the chat route, through the fixed headers.
    chat: String,
    /// `host`, `user-agent`, `authorization` and the configured headers' lines (a `GET`'s
    /// headers).
    common: String,
    /// The session id's header line up to its value (`x-session-id: `), if one is sent.
    session: Option<String>,
    style: ClientStyle,
}

impl Heads {
    /// The heads for `endpoint`, with `api_key` as a bearer token when set, `headers` on every
    /// request (a configured `User-Agent` replaces agentload's) and session ids in
    /// `session_header` (none when empty, and none in `style` agentperf-local); `close`: every
    /// request asks the server to close its connection after the answer (`connection: close`).
    ///
    /// # Errors
    /// When the API key, a header or the chat route cannot go in a head (control
    /// characters, a name that is no token), a header is one agentload writes itself or is
    /// given twice, or an `Authorization` header meets an API key.
    pub(super) fn new(
        endpoint: &Endpoint,
        url: &str,
        api_key: Option<&str>,
        close: bool,
        headers: &[(String, String)],
        session_header: &str,
        style: ClientStyle,
    ) -> Result<Self, EndpointError> {
        let invalid = |reason: &str| EndpointError {
            url: url.to_owned(),
            reason: reason.into(),
        };
        let session = session_header.trim();
        if !session.is_empty() && !header_name(session) {
            return Err(invalid(&format!(
                "endpoint.session_header `{session}` is not a header name"
            )));
        }
        let mut names = std::collections::BTreeSet::new();
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if !header_name(name) {
                return Err(invalid(&format!(
                    "endpoint.headers: `{name}` is not a header name"
                )));
            }
            if !header_value(value.as_bytes()) {
                return Err(invalid(&format!(
                    "endpoint.headers.{name}: the value is not a valid header value"
                )));
            }
            if OWN_HEADERS.contains(&lower.as_str())
                || lower.eq_ignore_ascii_case(session)
                || (style == ClientStyle::AgentperfLocal && lower == "accept-encoding")
            {
                return Err(invalid(&format!(
                    "endpoint.headers.{name}: agentload writes this header itself"
                )));
            }
            if lower == "authorization" && api_key.is_some() {
                return Err(invalid(
                    "endpoint.headers.Authorization and the API key (AGENTLOAD_API_KEY or \
                     OPENAI_API_KEY) would both set Authorization; keep one",
                ));
            }
            if !names.insert(lower) {
                return Err(invalid(&format!(
                    "endpoint.headers: `{name}` is given twice"
                )));
            }
        }
        let mut common = format!("host: {}\r\n", endpoint.authority);
        if !names.contains("user-agent") {
            common.push_str(&format!("user-agent: {USER_AGENT}\r\n"));
        }
        if let Some(key) = api_key {
            if !header_value(key.as_bytes()) {
                return Err(invalid("the API key is not a valid header value"));
            }
            common.push_str(&format!("authorization: Bearer {key}\r\n"));
        }
        if close {
            common.push_str("connection: close\r\n");
        }
        for (name, value) in headers {
            common.push_str(&format!("{name}: {}\r\n", value.trim()));
        }
        let route = endpoint.path("/v1/chat/completions");
        if !request_target(&route) {
            return Err(invalid("the chat route is not a valid request target"));
        }
        let (chat, session) = match style {
            ClientStyle::Reference => (
                format!("POST {route} HTTP/1.1\r\n{common}content-type: application/json\r\n"),
                (!session.is_empty()).then(|| format!("{}: ", session.to_ascii_lowercase())),
            ),
            ClientStyle::AgentperfLocal => (
                format!(
                    "POST {route} HTTP/1.1\r\n{common}accept: text/event-stream\r\n\
                     accept-encoding: identity\r\ncontent-type: application/json\r\n"
                ),
                None,
            ),
        };
        Ok(Self {
            chat,
            common,
            session,
            style,
        })
    }

    /// A chat request's head: `stream` asks for an event stream, `session_id` goes in the
    /// session header (left out when it cannot go in a head; a workload's ids are checked
    /// when it is configured), and the body is `len` bytes long.
    pub(super) fn chat(&self, stream: bool, session_id: &str, len: usize) -> Vec<u8> {
        let mut head = String::with_capacity(self.chat.len() + session_id.len() + 80);
        head.push_str(&self.chat);
        if stream && self.style == ClientStyle::Reference {
            head.push_str("accept: text/event-stream\r\n");
        }
        if let Some(session) = &self.session {
            if header_value(session_id.as_bytes()) {
                head.push_str(session);
                head.push_str(session_id);
                head.push_str("\r\n");
            }
        }
        head.push_str("content-length: ");
        head.push_str(&len.to_string());
        head.push_str("\r\n\r\n");
        head.into_bytes()
    }

    /// A `GET` of `path` (a request target, see [`request_target`]).
    pub(super) fn get(&self, path: &str) -> Vec<u8> {
        format!("GET {path} HTTP/1.1\r\n{}\r\n", self.common).into_bytes()
    }
}

/// Whether `value` can be a header value: visible ASCII, spaces, tabs and bytes over 0x7f
/// (what `http::HeaderValue` takes), nothing that could end the line.
fn header_value(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80)
}

/// Whether `name` can be a header name: an RFC 9110 token.
fn header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `path` can be a request target: an absolute path of visible ASCII (no space, no
/// control character).
pub(super) fn request_target(path: &str) -> bool {
    path.starts_with('/') && path.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_carry_the_fixed_headers_once_made_and_the_requests_own() {
        let endpoint = Endpoint::parse("http://127.0.0.1:8080/v1").unwrap();
        let heads = Heads::new(
            &endpoint,
            "u",
            Some("sk-1"),
            false,
            &[],
            "X-Session-ID",
            ClientStyle::Reference,
        )
        .unwrap();
        let chat = String::from_utf8(heads.chat(true, "conv-7", 1234)).unwrap();
        assert_eq!(
            chat,
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nuser-agent: \
                 {USER_AGENT}\r\nauthorization: Bearer sk-1\r\ncontent-type: application/json\r\n\
                 accept: text/event-stream\r\nx-session-id: conv-7\r\ncontent-length: 1234\r\n\r\n"
            )
        );
        // Not streamed, and an id that cannot go in a head is left out.
        let plain = String::from_utf8(heads.chat(false, "a\r\nx-evil: 1", 2)).unwrap();
        assert!(
            !plain.contains("accept") && !plain.contains("evil"),
            "{plain}"
        );
        assert!(plain.ends_with("content-length: 2\r\n\r\n"), "{plain}");
        // Configured headers on every request, a configured session header, or none.
        let routed = Heads::new(
            &endpoint,
            "u",
            None,
            false,
            &[
                ("X-Gateway-Key".into(), "g-1".into()),
                ("User-Agent".into(), "mine/1".into()),
            ],
            "X-SMG-Routing-Key",
            ClientStyle::Reference,
        )
        .unwrap();
        let chat = String::from_utf8(routed.chat(false, "s-9", 2)).unwrap();
        assert!(
            chat.contains("X-Gateway-Key: g-1\r\n")
                && chat.contains("x-smg-routing-key: s-9\r\n")
                && chat.contains("User-Agent: mine/1\r\n")
                && !chat.contains("agentload/")
                && !chat.contains("x-session-id"),
            "{chat}"
        );
        assert!(String::from_utf8(routed.get("/v1/models"))
            .unwrap()
            .contains("X-Gateway-Key: g-1"));
        let unrouted =
            Heads::new(&endpoint, "u", None, false, &[], "", ClientStyle::Reference).unwrap();
        assert!(!String::from_utf8(unrouted.chat(true, "s", 1))
            .unwrap()
            .contains(": s\r\n"));
        let get = String::from_utf8(heads.get("/v1/models")).unwrap();
        assert_eq!(
            get,
            format!(
                "GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nuser-agent: {USER_AGENT}\r\n\
                 authorization: Bearer sk-1\r\n\r\n"
            )
        );
        // Without a key, and with each request on a connection of its own.
        let anonymous = Heads::new(
            &endpoint,
            "u",
            None,
            true,
            &[],
            "X-Session-ID",
            ClientStyle::Reference,
        )
        .unwrap();
        let get = String::from_utf8(anonymous.get("/x")).unwrap();
        assert!(!get.contains("authorization"), "{get}");
        let chat = String::from_utf8(anonymous.chat(true, "s", 1)).unwrap();
        for head in [get, chat] {
            assert_eq!(head.matches("connection: close\r\n").count(), 1, "{head}");
        }
        assert!(!String::from_utf8(heads.chat(true, "s", 1))
            .unwrap()
            .contains("connection:"));
    }

    #[test]
    fn agentperf_local_heads_carry_its_headers_and_no_session() {
        let endpoint = Endpoint::parse("http://127.0.0.1:8080/v1").unwrap();
        let heads = Heads::new(
            &endpoint,
            "u",
            None,
            false,
            &[],
            "X-Session-ID",
            ClientStyle::AgentperfLocal,
        )
        .unwrap();
        let chat = String::from_utf8(heads.chat(true, "conv-7", 99)).unwrap();
        assert_eq!(
            chat,
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nuser-agent: \
                 {USER_AGENT}\r\naccept: text/event-stream\r\naccept-encoding: identity\r\n\
                 content-type: application/json\r\ncontent-length: 99\r\n\r\n"
            )
        );
    }

    #[test]
    fn what_cannot_go_in_a_head_is_refused() {
        let endpoint = Endpoint::parse("http://h:1").unwrap();
        let Err(err) = Heads::new(
            &endpoint,
            "http://h:1",
            Some("k\nx"),
            false,
            &[],
            "x",
            ClientStyle::Reference,
        ) else {
            panic!("a key with a line end was taken");
        };
        assert!(err.to_string().contains("API key"), "{err}");
        assert!(Heads::new(
            &endpoint,
            "u",
            Some("k é\t"),
            false,
            &[],
            "x",
            ClientStyle::Reference
        )
        .is_ok());
        let header = |name: &str, value: &str| vec![(name.to_owned(), value.to_owned())];
        for (headers, key, session, why) in [
            (
                header("X-Org", "a\r\nx-evil: 1"),
                None,
                "x-session-id",
                "not a valid header value",
            ),
            (
                header("X Org", "a"),
                None,
                "x-session-id",
                "not a header name",
            ),
            (
                header("Content-Length", "5"),
                None,
                "x-session-id",
                "writes this header itself",
            ),
            (
                header("x-routing", "5"),
                None,
                "X-Routing",
                "writes this header itself",
            ),
            (
                header("Authorization", "Bearer g"),
                Some("k"),
                "x",
                "keep one",
            ),
            (
                vec![("A".into(), "1".into()), ("a".into(), "2".into())],
                None,
                "x",
                "twice",
            ),
            (vec![], None, "bad name", "endpoint.session_header"),
        ] {
            let Err(err) = Heads::new(
                &endpoint,
                "u",
                key,
                false,
                &headers,
                session,
                ClientStyle::Reference,
            ) else {
                panic!("{headers:?} taken");
            };
            assert!(err.to_string().contains(why), "{headers:?}: {err}");
        }
        assert!(request_target("/v1/models"));
        for bad in ["v1/models", "/v1 models", "/v1\r\n", ""] {
            assert!(!request_target(bad), "{bad:?}");
        }
    }
}
