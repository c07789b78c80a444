//! The links an article may carry: `http` and `https` URLs with a plain host, checked by text
//! and by the WHATWG URL parser.

use super::MAX_LINK_CHARS;

/// Whether `link` is an `http` or `https` URL this site accepts: at most [`MAX_LINK_CHARS`]
/// visible ASCII characters (no spaces; internationalized names in punycode, other characters
/// percent-encoded), written `http://` or `https://` (any case), then a host of dot-separated
/// labels of `[A-Za-z0-9-]` (or an IPv4 or bracketed IPv6 address) with an optional port
/// 1..=65535, then optionally a path, query or fragment. The URL is parsed by the `url` crate
/// (the WHATWG URL Standard); user info (`user@host`) is refused: it disguises the real host.
pub fn is_link(link: &str) -> bool {
    if link.len() > MAX_LINK_CHARS || !link.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    // The WHATWG parser is lenient where a link should not be (`http:host`, `http:///host`,
    // an empty port): the text itself must start with the scheme and `//` and have an
    // authority that does not end in `:`.
    let lower = link.get(..8).unwrap_or(link).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &link[8..]
    } else if lower.starts_with("http://") {
        &link[7..]
    } else {
        return false;
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if authority.is_empty() || authority.ends_with(':') || authority.contains('@') {
        return false;
    }
    let Ok(url) = url::Url::parse(link) else {
        return false;
    };
    if url.port() == Some(0) {
        return false;
    }
    match url.host() {
        Some(url::Host::Domain(host)) => {
            let host = host.strip_suffix('.').unwrap_or(host);
            let label_ok = |l: &str| {
                (1..=63).contains(&l.len())
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            };
            !host.is_empty() && host.len() <= 253 && host.split('.').all(label_ok)
        }
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => true,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links() {
        for ok in [
            "http://example.com",
            "https://example.com/",
            "HTTPS://Example.COM:8443/a/b?c=d&e=%20#frag",
            "http://[::1]:8080/x",
            "http://127.0.0.1/",
            "https://xn--bcher-kva.example/",
            "http://example.com.",
        ] {
            assert!(is_link(ok), "{ok}");
        }
        for bad in [
            "",
            "example.com",
            "ftp://example.com",
            "javascript:alert(1)",
            "http://",
            "https:///path",
            "http://exa mple.com",
            "http://user@example.com/",
            "http://example.com:0/",
            "http://example.com:65536/",
            "http://example.com:/",
            "http://-bad-.com/",
            "http://a..b/",
            "http://[zz]/",
            "https://bücher.example/",
            "http://example.com/\n",
        ] {
            assert!(!is_link(bad), "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_LINK_CHARS - 20));
        assert_eq!(long.len(), MAX_LINK_CHARS);
        assert!(is_link(&long));
        assert!(!is_link(&format!("{long}a")));
    }
}
