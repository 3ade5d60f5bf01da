// A test module for sdk/assemblyscript's host function wrappers (not an
// example to copy): pre_request runs the operation named in field 1 and
// writes what the host answered, one field per step, so aslib_test.go can
// check each wrapper against the real host (TestASLibraryHostCalls).

import {
  Hook, HostResult, Level, chat, chatBatch, chatReserve, countTokens, http, input, kvGet, kvPut, log, output, register, request,
} from "../../../sdk/assemblyscript/switchyard";
export { switchyard_abi_v1, sy_input, sy_handle } from "../../../sdk/assemblyscript/switchyard";

// report writes "error <code>: <message>" for a failed call; true if ok.
function ok(r: HostResult): bool {
  if (r.ok) return true;
  output.fieldString("error " + r.code.toString() + ": " + r.string(0));
  return false;
}

// copyFields writes every field of the last result.
function copyFields(r: HostResult): void {
  const n = r.count();
  for (let i = 0; i < n; i++) {
    r.field(i);
    output.field(r.ptr, r.len);
  }
}

function preRequest(): void {
  const op = input.string(1);
  const arg = input.string(2);
  if (op == "log") {
    log(Level.Warn, "hello from assemblyscript");
    output.fieldString("logged");
  } else if (op == "kv") {
    const big = new Uint8Array(70 << 10).fill(0x78);
    request.reset().fieldString("k").fieldBytes(big).fieldString("60");
    ok(kvPut(request));
    request.reset().fieldString("k");
    let r = kvGet(request);
    if (ok(r)) output.fieldString("get " + r.bytes(0).length.toString());
    request.reset().fieldString("k").fieldString("").fieldString("0");
    ok(kvPut(request));
    request.reset().fieldString("k");
    r = kvGet(request);
    output.fieldString(r.code == -3 ? "deleted" : "still there");
  } else if (op == "tokens") {
    request.reset().fieldString("openai/gpt-4o").fieldString(arg);
    const r = countTokens(request);
    if (ok(r)) output.fieldString(r.string(0));
  } else if (op == "chat") {
    request.reset().fieldString(arg);
    let r = chat(request);
    if (ok(r)) copyFields(r);
    request.reset().fieldString('{"n":1}').fieldString('{"n":2}');
    r = chatBatch(request);
    if (ok(r)) copyFields(r);
    request.reset().fieldString('{"calls":[]}');
    r = chatReserve(request);
    if (ok(r)) copyFields(r);
  } else if (op == "http") {
    request.reset().fieldString("POST").fieldString(arg).fieldString("X-Test: 1\n").fieldString("ping");
    let r = http(request);
    if (ok(r)) {
      output.fieldString(r.string(0));
      output.fieldString(r.string(2));
    }
    request.reset().fieldString("GET").fieldString("http://not-granted.example/").fieldString("").fieldString("");
    ok(http(request));
  } else {
    output.fail("unknown op " + op);
  }
}

function postResponse(): void {
  input.field(1);
  output.fail("refused " + input.len.toString() + " bytes");
}

register(Hook.PreRequest, preRequest);
register(Hook.PostResponse, postResponse);
