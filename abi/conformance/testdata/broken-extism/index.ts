// A plugin built with the Extism PDK that the guest check must fail
// (issue 37: the conformance kit covers Extism guests), broken the ways a
// newcomer breaks one:
//
//   - pre_request reads a field's length from its first byte only, so it
//     works on inputs under 256 bytes and echoes a truncated body (not a
//     JSON object) past them;
//   - post_response traps on every call;
//   - it exports no post_chunk, so a manifest declaring one lies
//     (lacking.json), which the host refuses at load.
//
// Built by `make -C examples` (the AssemblyScript Extism toolchain of
// examples/as-extism-plugin) as build/examples/testdata/broken-extism.wasm.
import { Host } from "@extism/as-pdk";

export function pre_request(): i32 {
  const input = Host.input();
  // The bug: one byte of each little-endian u32 length.
  const ctxLen = <i32>input[0];
  const bodyAt = 4 + ctxLen;
  const bodyLen = <i32>input[bodyAt];
  const body = input.subarray(bodyAt + 4, bodyAt + 4 + bodyLen);
  const action = String.UTF8.encode("continue");
  const out = new Uint8Array(1 + 4 + action.byteLength + 4 + body.length + 4);
  let p = 1; // status 0: ok
  out[p] = <u8>action.byteLength;
  p += 4;
  out.set(Uint8Array.wrap(action), p);
  p += action.byteLength;
  out[p] = <u8>body.length;
  out[p + 1] = <u8>(body.length >> 8);
  out[p + 2] = <u8>(body.length >> 16);
  p += 4;
  out.set(body, p);
  // the summary: an empty field (its zero length is already there)
  Host.output(out);
  return 0;
}

export function post_response(): i32 {
  unreachable();
  return 0;
}

// abort without env.abort: the host refuses modules that import it.
export function brokenAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  unreachable();
}
