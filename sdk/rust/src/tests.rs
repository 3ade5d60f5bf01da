// Tests of the frame codec and the output a handler leaves, run natively:
//   rustc --edition 2021 --test sdk/rust/src/lib.rs -o /tmp/switchyard-test && /tmp/switchyard-test
use super::*;

fn frame(parts: &[&[u8]]) -> Vec<u8> {
    let mut f = Vec::new();
    for p in parts {
        append_field(&mut f, p);
    }
    f
}

fn echo(input: &In, out: &mut Out) -> Result<(), Error> {
    for i in 0..input.len() {
        out.field(input.field(i));
    }
    out.open();
    out.write_str("piece");
    out.byte(b'-');
    out.write(b"wise");
    out.close();
    Ok(())
}

fn failing(input: &In, _out: &mut Out) -> Result<(), Error> {
    Err(Error::from(format!("bad input {}", input.str(0)?)))
}

#[test]
fn frames_round_trip() {
    let big = vec![7u8; 70 << 10]; // a length over 16 bits
    let cases: Vec<Vec<&[u8]>> = vec![vec![], vec![b""], vec![b"ctx", b"", &big], vec![&[0, 1, 255]]];
    for parts in cases {
        let mut out = Out::new();
        call(echo, &frame(&parts), &mut out);
        let got = out.bytes();
        assert_eq!(got[0], STATUS_OK);
        let mut want = frame(&parts);
        append_field(&mut want, b"piece-wise");
        assert_eq!(&got[1..], &want[..]);
        let mut list = Vec::new();
        fields(&mut list, &got[1..]).unwrap();
        assert_eq!(list.len(), parts.len() + 1);
    }
}

#[test]
fn errors_become_status_one() {
    let mut out = Out::new();
    call(failing, &frame(&[b"x"]), &mut out);
    assert_eq!(out.bytes(), b"\x01bad input x");
    // A truncated frame is abi.ErrFrame's message, as in the Go sdk.
    for bad in [&[1u8, 0, 0][..], &[5, 0, 0, 0, b'a'][..]] {
        call(echo, bad, &mut out);
        assert_eq!(out.bytes(), b"\x01abi: malformed frame");
    }
    // The output is reset by the next call.
    call(echo, &frame(&[b"a"]), &mut out);
    assert_eq!(out.bytes()[0], STATUS_OK);
}

#[test]
fn missing_fields_are_empty() {
    fn probe(input: &In, out: &mut Out) -> Result<(), Error> {
        assert_eq!(input.field(5), b"");
        assert!(input.str(0).is_err());
        out.field_str("ok");
        Ok(())
    }
    let mut out = Out::new();
    call(probe, &frame(&[&[0xff]]), &mut out);
    assert_eq!(&out.bytes()[1..], &frame(&[b"ok"])[..]);
}

#[test]
fn hooks_have_their_abi_ids_and_names() {
    for id in 1..=10 {
        let h = Hook::from_id(id).unwrap();
        assert_eq!(h as u32, id);
        assert!(!h.name().is_empty());
    }
    assert_eq!(Hook::from_id(7).unwrap().name(), "pre_request");
    assert!(Hook::from_id(0).is_none() && Hook::from_id(11).is_none());
}

#[test]
fn host_functions_off_wasm_are_denied() {
    let e = kv_get("k").unwrap_err();
    assert_eq!(e.code, HOST_DENIED);
    assert!(e.message.contains("only available inside a Wasm module"), "{}", e.message);
    assert_eq!(http("GET", "https://example.com/", "", b"").unwrap_err().code, HOST_DENIED);
    assert_eq!(chat_batch(&[b"{}"]).unwrap_err().code, HOST_DENIED);
}
