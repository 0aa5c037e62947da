//! Escaping user-provided text (scenario names, descriptions, file paths, explanations) for
//! the HTML page and for Markdown. Every piece of such text goes through one of these two
//! functions; nothing else writes it.

/// `text` as HTML (and XML) character data or a quoted attribute value: `&`, `<`, `>`, `"`
/// and `'` become references, and characters XML 1.0 cannot carry (control characters other
/// than tab, newline and carriage return) become U+FFFD, so the page stays well-formed XML.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push('\u{fffd}');
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as inline Markdown (GitHub-flavoured) that renders as the text itself, also inside
/// a table cell or after a list marker: every character Markdown or a table gives a meaning
/// inline (`\`, `` ` ``, `*`, `_`, `[`, `]`, `<`, `>`, `|`, `~`, `&`) is escaped with a
/// backslash, and so is a leading `#` (a heading); line breaks become spaces (a row is one
/// line).
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    if text.starts_with('#') {
        out.push('\\');
    }
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `text` as a Markdown code span: backticks around it, more of them than any run of
/// backticks inside, and `|` escaped so a span in a table cell does not split the cell.
pub fn markdown_code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let body = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_become_inert_html() {
        let hostile = r#"<script>alert(1)</script> & "q" 'x'"#;
        let escaped = html(hostile);
        assert_eq!(
            escaped,
            "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; &#39;x&#39;"
        );
        for bad in ['<', '>', '"', '\''] {
            assert!(!escaped.contains(bad), "{escaped}");
        }
        // Every `&` left starts one of the five references.
        let rest = escaped
            .replace("&amp;", "")
            .replace("&lt;", "")
            .replace("&gt;", "")
            .replace("&quot;", "")
            .replace("&#39;", "");
        assert!(!rest.contains('&'), "{rest}");
        assert_eq!(html("a\u{1}b\u{7f}"), "a\u{fffd}b\u{fffd}");
        assert_eq!(html("×5 ✓"), "×5 ✓");
    }

    #[test]
    fn markdown_text_cannot_split_a_table_or_open_markup() {
        assert_eq!(
            markdown("<script>a|b</script> & *x* _y_ [l](u)\nz"),
            r"\<script\>a\|b\</script\> \& \*x\* \_y\_ \[l\](u) z"
        );
        assert_eq!(markdown(r"a\|b"), r"a\\\|b");
        assert_eq!(markdown("# not a heading #1"), r"\# not a heading #1");
        assert_eq!(markdown_code("lockstep run a|b"), r"`lockstep run a\|b`");
        assert_eq!(markdown_code("a`b"), "``a`b``");
        assert_eq!(markdown_code("`a"), "`` `a ``");
    }
}
