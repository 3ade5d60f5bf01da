//! A little JSON reading, enough for ctx and configuration (the Go sdk's
//! `sdk.Get`): values are returned raw, as slices of the input (a string
//! with its quotes and escapes; `str_content` strips the quotes). Nothing is
//! allocated.

fn ws(j: &[u8], mut i: usize) -> usize {
    while i < j.len() && matches!(j[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The offset just past the value at `i`, or None when it is malformed.
fn skip(j: &[u8], mut i: usize) -> Option<usize> {
    match *j.get(i)? {
        b'"' => {
            i += 1;
            while i < j.len() {
                match j[i] {
                    b'\\' => i += 2,
                    b'"' => return Some(i + 1),
                    _ => i += 1,
                }
            }
            None
        }
        open @ (b'{' | b'[') => {
            let close = if open == b'{' { b'}' } else { b']' };
            i = ws(j, i + 1);
            if j.get(i) == Some(&close) {
                return Some(i + 1);
            }
            loop {
                if close == b'}' {
                    i = ws(j, skip(j, ws(j, i))?);
                    if j.get(i) != Some(&b':') {
                        return None;
                    }
                    i += 1;
                }
                i = ws(j, skip(j, ws(j, i))?);
                match *j.get(i)? {
                    c if c == close => return Some(i + 1),
                    b',' => i += 1,
                    _ => return None,
                }
            }
        }
        _ => {
            let start = i;
            while i < j.len() && !matches!(j[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            if i == start {
                None
            } else {
                Some(i)
            }
        }
    }
}

/// The raw value at a dotted path of object members (`"config.blocked"`),
/// or None when it is absent or the JSON on the way is malformed.
pub fn get<'a>(json: &'a [u8], path: &str) -> Option<&'a [u8]> {
    let mut i = ws(json, 0);
    for key in path.split('.') {
        if json.get(i) != Some(&b'{') {
            return None;
        }
        i = ws(json, i + 1);
        loop {
            if json.get(i) != Some(&b'"') {
                return None;
            }
            let kend = skip(json, i)?;
            let found = &json[i + 1..kend - 1] == key.as_bytes();
            i = ws(json, kend);
            if json.get(i) != Some(&b':') {
                return None;
            }
            i = ws(json, i + 1);
            if found {
                break;
            }
            i = ws(json, skip(json, i)?);
            if json.get(i) != Some(&b',') {
                return None;
            }
            i = ws(json, i + 1);
        }
    }
    let end = skip(json, i)?;
    Some(&json[i..end])
}

/// The elements of a raw JSON array, raw; stops at the end or at
/// malformed JSON.
pub fn items(array: &[u8]) -> Items<'_> {
    Items { rest: array }
}

/// The iterator of `items`.
pub struct Items<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let j = self.rest;
        let mut i = ws(j, 0);
        if matches!(j.get(i), Some(b'[') | Some(b',')) {
            i = ws(j, i + 1);
        }
        if i >= j.len() || j[i] == b']' {
            return None;
        }
        let end = skip(j, i)?;
        self.rest = &j[end..];
        Some(&j[i..end])
    }
}

/// A raw JSON string's content without its quotes (escapes left as they
/// are); None when `raw` is not a string.
pub fn str_content(raw: &[u8]) -> Option<&[u8]> {
    if raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' {
        Some(&raw[1..raw.len() - 1])
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_paths_and_arrays() {
        let j = br#"{"model":"x","config":{"id":"h","n":{"a":[1,{"b":2}]},"blocked":["a\"b", "secret-project" ,3]}}"#;
        let list = get(j, "config.blocked").unwrap();
        let words: Vec<&[u8]> = items(list).collect();
        assert_eq!(words, vec![&br#""a\"b""#[..], &b"\"secret-project\""[..], &b"3"[..]]);
        assert_eq!(str_content(words[1]), Some(&b"secret-project"[..]));
        assert_eq!(str_content(words[2]), None);
        assert_eq!(get(j, "model"), Some(&b"\"x\""[..]));
        assert_eq!(get(j, "config.n.a"), Some(&b"[1,{\"b\":2}]"[..]));
        assert_eq!(get(j, "config.missing"), None);
        assert_eq!(get(b"{\"a\":", "a"), None);
        assert_eq!(items(b"[]").next(), None);
    }
}
