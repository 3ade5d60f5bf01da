//! A test module for sdk/rust's host function wrappers (not an example to
//! copy): pre_request runs the operation named in field 1 and writes what
//! the host answered, one field per step, so examples_test.go can check
//! each wrapper against the real host (TestRustLibraryHostCalls).

use switchyard::{Error, Hook, In, Out};

switchyard::export_hooks! {
    Hook::PreRequest => pre_request,
    Hook::PostResponse => failing,
}

fn failing(input: &In, _out: &mut Out) -> Result<(), Error> {
    Err(Error::from(format!("refused {} bytes", input.field(1).len())))
}

fn code<T>(r: Result<T, switchyard::HostError>, out: &mut Out) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            out.field_str(&format!("error {}: {}", e.code, e.message));
            None
        }
    }
}

fn pre_request(input: &In, out: &mut Out) -> Result<(), Error> {
    match input.str(1)? {
        "log" => {
            switchyard::log(switchyard::LEVEL_WARN, "hello from rust");
            out.field_str("logged");
        }
        "kv" => {
            let big = vec![b'x'; 70 << 10];
            code(switchyard::kv_put("k", &big, 60), out);
            if let Some(v) = code(switchyard::kv_get("k"), out) {
                out.field_str(&format!("get {}", v.map(|v| v.len()).unwrap_or(0)));
            }
            code(switchyard::kv_delete("k"), out);
            if let Some(v) = code(switchyard::kv_get("k"), out) {
                out.field_str(if v.is_none() { "deleted" } else { "still there" });
            }
            if let Some(n) = code(switchyard::kv_put_evicting("e", b"v", 0), out) {
                out.field_str(&format!("evicted {}", n));
            }
        }
        "tokens" => {
            if let Some(n) = code(switchyard::count_tokens("openai/gpt-4o", input.str(2)?), out) {
                out.field_str(&n.to_string());
            }
        }
        "chat" => {
            if let Some(r) = code(switchyard::chat(input.field(2)), out) {
                out.field_str(&r.status.to_string());
                out.field(&r.body);
            }
            if let Some(rs) = code(switchyard::chat_batch(&[b"{\"n\":1}", b"{\"n\":2}"]), out) {
                for r in rs {
                    out.field_str(&r.status.to_string());
                    out.field(&r.body);
                }
            }
            if let Some(r) = code(switchyard::chat_reserve(b"{\"calls\":[]}"), out) {
                out.field_str(&r.status.to_string());
                out.field(&r.body);
            }
        }
        "http" => {
            if let Some(r) = code(switchyard::http("POST", input.str(2)?, "X-Test: 1\n", b"ping"), out) {
                out.field_str(&r.status.to_string());
                out.field(&r.body);
            }
            code(switchyard::http("GET", "https://denied.example/", "", b""), out);
        }
        "panic" => {
            let v: Vec<u8> = Vec::new();
            out.byte(v[input.field(2).len()]);
        }
        other => return Err(Error::from(format!("unknown op {}", other))),
    }
    Ok(())
}
