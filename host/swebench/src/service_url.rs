//! The service's address: an http(s) root with no path, query, fragment or
//! credentials, as the reference's `_normalize_service_url` accepts.

use crate::Error;
use reqwest::Url;

/// A checked service root (`http://host:port/`).
#[derive(Debug, Clone)]
pub struct ServiceUrl(Url);

impl ServiceUrl {
    /// Checks `raw` (surrounding blanks ignored).
    ///
    /// # Errors
    /// [`Error::ServiceUrl`] when it is empty, not http(s), has a user or
    /// password, a path other than `/`, a query or a fragment.
    pub fn parse(raw: &str) -> Result<Self, Error> {
        let raw = raw.trim();
        // A URL with credentials is not echoed.
        let shown = if raw.contains('@') {
            "(a URL with credentials)".to_owned()
        } else {
            format!("`{raw}`")
        };
        let bad = |why: &str| Error::ServiceUrl {
            shown: shown.clone(),
            why: why.to_owned(),
        };
        if raw.is_empty() {
            return Err(bad(
                "it is required: start the SWE-bench service and give its URL",
            ));
        }
        let url = Url::parse(raw).map_err(|e| bad(&format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(&format!("the scheme is `{}`", url.scheme())));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("it has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("it carries a user or password"));
        }
        if url.path() != "/" {
            return Err(bad(&format!("it has the path `{}`", url.path())));
        }
        if url.query().is_some_and(|q| !q.is_empty())
            || url.fragment().is_some_and(|f| !f.is_empty())
        {
            return Err(bad("it has a query or fragment"));
        }
        let mut root = url;
        root.set_query(None);
        root.set_fragment(None);
        Ok(Self(root))
    }

    /// The URL of `path` (relative, no leading `/`) under the root.
    pub(crate) fn join(&self, path: &str) -> Url {
        self.0
            .join(path)
            .expect("a relative path joins an http root URL")
    }
}

impl std::fmt::Display for ServiceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_accepted_and_anything_else_is_refused_naming_why() {
        for ok in [
            "http://service-host:18080",
            " http://127.0.0.1:18080/ ",
            "http://h/?",
            "https://service.example.com",
        ] {
            let url = ServiceUrl::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(url.to_string().ends_with('/'), "{url}");
            assert_eq!(url.join("v1/runs").path(), "/v1/runs");
        }
        for (bad, why) in [
            ("", "required"),
            ("http://service-host:18080/v1", "the path `/v1`"),
            ("http://user@service-host:18080", "user or password"),
            (
                "http://user:password@service-host:18080",
                "user or password",
            ),
            ("http://h:1/?a=1", "query"),
            ("http://h:1/#x", "fragment"),
            ("ftp://h", "scheme"),
            ("service-host:18080", "scheme"),
            ("http://h:99999", "not a URL"),
        ] {
            let err = ServiceUrl::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains("swebench_service_url"),
                "{bad}: {err}"
            );
            assert!(!err.contains("password@"), "{err}");
        }
    }
}
