// A test module of the extism:host/user host functions from the Extism
// AssemblyScript PDK (not an example to copy; TestASExtismHostCalls): the
// snippet of docs/plugins.md section 5, as a PDK-built guest calls them.
//
// pre_request passes [model, text] (text: its input's field 1) to
// count_tokens; post_response passes its field 1 to chat as the body. Each
// hands the result block back as its output: status 0 and the result
// frame, or the failure's code and a frame of its message (a code of 1 is
// then the hook's failure status, so the host fails the call with it).

import { Host, Memory } from "@extism/as-pdk";
import { length } from "@extism/as-pdk/lib/env";

@external("extism:host/user", "count_tokens")
declare function count_tokens(input: u64): u64;
@external("extism:host/user", "chat")
declare function chat(input: u64): u64;

// frame encodes fields as a frame: each a little-endian u32 length and its bytes.
function frame(a: Uint8Array, b: Uint8Array): Uint8Array {
  const f = new Uint8Array(8 + a.length + b.length);
  store<u32>(f.dataStart, a.length);
  f.set(a, 4);
  store<u32>(f.dataStart + 4 + a.length, b.length);
  f.set(b, 8 + a.length);
  return f;
}

// field1 is field 1 of the input frame (after ctx).
function field1(): Uint8Array {
  const inp = Host.input();
  const ctxLen = load<u32>(inp.dataStart);
  return inp.subarray(8 + ctxLen, 8 + ctxLen + load<u32>(inp.dataStart + 4 + ctxLen));
}

function block(off: u64): Uint8Array {
  return new Memory(off, length(off)).toUint8Array();
}

export function pre_request(): i32 {
  const model = Uint8Array.wrap(String.UTF8.encode("openai/gpt-4o"));
  Host.output(block(count_tokens(Memory.allocateBytes(frame(model, field1())).offset)));
  return 0;
}

export function post_response(): i32 {
  const body = field1();
  const f = new Uint8Array(4 + body.length);
  store<u32>(f.dataStart, body.length);
  f.set(body, 4);
  Host.output(block(chat(Memory.allocateBytes(f).offset)));
  return 0;
}
