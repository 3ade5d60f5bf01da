#!/usr/bin/env python3
"""Writes dev.jsonl and heldout.jsonl, the evaluation set of the
response-healing plugin. Every case is written by hand below (no model
output, no third-party data set); README.md beside this file says what each
category holds. Deterministic: run it again and the files are the same.

Each line: {"id", "category", "format", "schema"?, "content", "expect"?,
"unchanged"?, "schema_valid"?}
  format       the request's response_format.type: json_object,
               json_schema, text, or "" (no response_format)
  schema       the json_schema.schema of a json_schema request
  content      the model's answer (message.content)
  expect       the JSON value a repair must produce (compared as values)
  unchanged    true: the answer must come back byte for byte
  schema_valid for json_schema rows: whether the final answer satisfies
               the schema (what the stage data must say)

The held-out split was written together with the dev split, before the
healer, and is never used to tune it: `go test -run TestEvalSet` asserts
minimum rates on it.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

PERSON = {"type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"},
                          "conditions": {"type": "string"}},
           "required": ["city", "temp_c"]}
TODO = {"type": "object",
        "properties": {"tasks": {"type": "array", "items": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}},
            "required": ["title", "done"]}}},
        "required": ["tasks"]}
SENTIMENT = {"type": "object",
             "properties": {"label": {"enum": ["positive", "negative", "neutral"]},
                            "score": {"type": "number", "minimum": 0, "maximum": 1}},
             "required": ["label", "score"]}
LIST = {"type": "array", "items": {"type": "string"}}


def case(category, content, expect=None, fmt="json_object", schema=None,
         unchanged=False, schema_valid=None):
    row = {"category": category, "format": fmt, "content": content}
    if schema is not None:
        row["schema"] = schema
    if unchanged:
        row["unchanged"] = True
    else:
        row["expect"] = expect
    if schema is not None:
        row["schema_valid"] = True if schema_valid is None else schema_valid
    return row


S = case  # short alias for the tables below

# ---------------------------------------------------------------- dev split
dev = [
    # fence: JSON in a Markdown code fence, with or without a language tag
    S("fence", "```json\n{\"city\": \"Oslo\", \"temp_c\": 4}\n```", {"city": "Oslo", "temp_c": 4}),
    S("fence", "Here you go:\n\n```json\n{\n  \"title\": \"Dune\",\n  \"year\": 1965\n}\n```\n", {"title": "Dune", "year": 1965}),
    S("fence", "```\n[1, 2, 3]\n```", [1, 2, 3], fmt="json_schema", schema={"type": "array"}),
    S("fence", "```JSON\n{\"ok\": true}\n```\nLet me know if you need anything else!", {"ok": True}),
    S("fence", "Sure! The data:\n```json\n{\"name\": \"Ada\", \"age\": 36}\n```", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("fence", "```json\n{\"items\": [\"milk\", \"eggs\"], \"total\": 2}\n```\n\nNote: quantities are not included.", {"items": ["milk", "eggs"], "total": 2}),

    # trailing_text: chatter after the JSON
    S("trailing_text", "{\"answer\": 42}\n\nI hope this helps!", {"answer": 42}),
    S("trailing_text", "{\"label\": \"positive\", \"score\": 0.93} This review is clearly positive.", {"label": "positive", "score": 0.93}, fmt="json_schema", schema=SENTIMENT),
    S("trailing_text", "{\"a\": 1}\nNote: the value of a is an approximation (see {ref} above).", {"a": 1}),
    S("trailing_text", "[\"red\", \"green\"]\n\nThese are the two colours you asked for.", ["red", "green"], fmt="json_schema", schema=LIST),
    S("trailing_text", "{\"status\": \"done\"}}\n", {"status": "done"}),
    S("trailing_text", "{\"x\": 1, \"y\": 2}\n---\nExplanation: x and y are the coordinates.", {"x": 1, "y": 2}),

    # trailing_comma
    S("trailing_comma", "{\"a\": 1, \"b\": 2,}", {"a": 1, "b": 2}),
    S("trailing_comma", "{\"tags\": [\"go\", \"wasm\",], \"n\": 2}", {"tags": ["go", "wasm"], "n": 2}),
    S("trailing_comma", "{\n  \"name\": \"Ada\",\n  \"age\": 36,\n}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("trailing_comma", "[{\"id\": 1,}, {\"id\": 2,},]", [{"id": 1}, {"id": 2}]),
    S("trailing_comma", "{\"matrix\": [[1, 2,], [3, 4,],],}", {"matrix": [[1, 2], [3, 4]]}),
    S("trailing_comma", "{\"a\": {\"b\": {\"c\": null,},},}", {"a": {"b": {"c": None}}}),

    # truncated: cut off before the closing brackets (max_tokens)
    S("truncated", "{\"items\": [{\"name\": \"a\"}, {\"name\": \"b", {"items": [{"name": "a"}, {"name": "b"}]}),
    S("truncated", "{\"summary\": \"The meeting covered the budget and", {"summary": "The meeting covered the budget and"}),
    S("truncated", "{\"values\": [1, 2, 3", {"values": [1, 2, 3]}),
    S("truncated", "{\"a\": {\"b\": {\"c\": [true, false", {"a": {"b": {"c": [True, False]}}}),
    S("truncated", "[{\"id\": 1, \"tags\": [\"x\"]}, {\"id\": 2, \"tags\": [\"y\", \"z\"", [{"id": 1, "tags": ["x"]}, {"id": 2, "tags": ["y", "z"]}]),
    S("truncated", "{\"city\": \"Lima\", \"temp_c\": 19.5", {"city": "Lima", "temp_c": 19.5}, fmt="json_schema", schema=WEATHER),

    # unquoted_keys
    S("unquoted_keys", "{name: \"Ada\", age: 36}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("unquoted_keys", "{city: \"Paris\", temp_c: 12.5, conditions: \"rain\"}", {"city": "Paris", "temp_c": 12.5, "conditions": "rain"}),
    S("unquoted_keys", "{\n  user_id: 17,\n  roles: [\"admin\", \"dev\"]\n}", {"user_id": 17, "roles": ["admin", "dev"]}),
    S("unquoted_keys", "{outer: {inner: {$ref: \"#/x\"}}}", {"outer": {"inner": {"$ref": "#/x"}}}),
    S("unquoted_keys", "[{id: 1, label: \"one\"}, {id: 2, label: \"two\"}]", [{"id": 1, "label": "one"}, {"id": 2, "label": "two"}]),
    S("unquoted_keys", "{\"a\": 1, b_2: 2, \"c\": 3}", {"a": 1, "b_2": 2, "c": 3}),

    # single_quotes
    S("single_quotes", "{'name': 'Ada', 'age': 36}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("single_quotes", "{'quote': 'He said \"no\" twice'}", {"quote": "He said \"no\" twice"}),
    S("single_quotes", "['alpha', 'beta', 'gamma']", ["alpha", "beta", "gamma"]),
    S("single_quotes", "{'msg': 'it\\'s fine'}", {"msg": "it's fine"}),
    S("single_quotes", "{'a': {'b': 'c'}, \"d\": 'e'}", {"a": {"b": "c"}, "d": "e"}),
    S("single_quotes", "{'path': 'C:\\\\Users\\\\ada'}", {"path": "C:\\Users\\ada"}),

    # python_literals
    S("python_literals", "{\"active\": True, \"deleted\": False, \"parent\": None}", {"active": True, "deleted": False, "parent": None}),
    S("python_literals", "{'ok': True, 'errors': []}", {"ok": True, "errors": []}),
    S("python_literals", "[True, False, None, 1]", [True, False, None, 1]),
    S("python_literals", "{\"tasks\": [{\"title\": \"write\", \"done\": True}, {\"title\": \"test\", \"done\": False}]}", {"tasks": [{"title": "write", "done": True}, {"title": "test", "done": False}]}, fmt="json_schema", schema=TODO),
    S("python_literals", "{\"result\": None}", {"result": None}),
    S("python_literals", "{\"flags\": {\"a\": True, \"b\": None}}", {"flags": {"a": True, "b": None}}),

    # nan_infinity: non-finite numbers become null
    S("nan_infinity", "{\"mean\": NaN, \"max\": 3.5}", {"mean": None, "max": 3.5}),
    S("nan_infinity", "{\"upper\": Infinity, \"lower\": -Infinity}", {"upper": None, "lower": None}),
    S("nan_infinity", "[1.5, NaN, 2.5]", [1.5, None, 2.5]),
    S("nan_infinity", "{\"ratio\": nan, \"n\": 0}", {"ratio": None, "n": 0}),
    S("nan_infinity", "{\"stats\": {\"var\": NaN, \"sd\": NaN}}", {"stats": {"var": None, "sd": None}}),
    S("nan_infinity", "{\"limit\": +Infinity}", {"limit": None}),

    # comments
    S("comments", "{\n  // the user's name\n  \"name\": \"Ada\",\n  \"age\": 36 // years\n}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("comments", "{\"a\": 1, /* legacy */ \"b\": 2}", {"a": 1, "b": 2}),
    S("comments", "/* result */\n{\"ok\": true}", {"ok": True}),
    S("comments", "[\n  1, // first\n  2  // second\n]", [1, 2]),
    S("comments", "{\"url\": \"https://example.com/a//b\", // keep the slashes\n \"n\": 1}", {"url": "https://example.com/a//b", "n": 1}),
    S("comments", "{\n  \"mode\": \"fast\" /* or \"slow\" */\n}", {"mode": "fast"}),

    # missing_commas
    S("missing_commas", "{\"a\": 1 \"b\": 2}", {"a": 1, "b": 2}),
    S("missing_commas", "{\n  \"name\": \"Ada\"\n  \"age\": 36\n}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("missing_commas", "[1 2 3]", [1, 2, 3]),
    S("missing_commas", "[{\"id\": 1} {\"id\": 2}]", [{"id": 1}, {"id": 2}]),
    S("missing_commas", "{\"tags\": [\"a\" \"b\"] \"n\": 2}", {"tags": ["a", "b"], "n": 2}),
    S("missing_commas", "{\"ok\": true\n\"count\": 3\n\"items\": []}", {"ok": True, "count": 3, "items": []}),

    # control_chars: raw newlines and tabs inside strings
    S("control_chars", "{\"poem\": \"Roses are red,\nViolets are blue\"}", {"poem": "Roses are red,\nViolets are blue"}),
    S("control_chars", "{\"code\": \"def f():\n\treturn 1\n\"}", {"code": "def f():\n\treturn 1\n"}),
    S("control_chars", "{\"address\": \"221B Baker Street\r\nLondon\"}", {"address": "221B Baker Street\r\nLondon"}),
    S("control_chars", "[\"line one\nline two\", \"ok\"]", ["line one\nline two", "ok"]),
    S("control_chars", "{\"tsv\": \"a\tb\tc\"}", {"tsv": "a\tb\tc"}),
    S("control_chars", "{\"note\": \"first\n\nsecond\"}", {"note": "first\n\nsecond"}),

    # smart_quotes used as JSON quotes
    S("smart_quotes", "{\u201cname\u201d: \u201cAda\u201d, \u201cage\u201d: 36}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("smart_quotes", "{\u201ccity\u201d: \u201cRome\u201d}", {"city": "Rome"}),
    S("smart_quotes", "[\u201cone\u201d, \u201ctwo\u201d]", ["one", "two"]),
    S("smart_quotes", "{\u2018a\u2019: \u2018b\u2019}", {"a": "b"}),
    S("smart_quotes", "{\"title\": \u201cThe Hobbit\u201d, \"year\": 1937}", {"title": "The Hobbit", "year": 1937}),
    S("smart_quotes", "{\u201cq\u201d: \u201cWhat\u2019s up?\u201d}", {"q": "What\u2019s up?"}),

    # cut_after_key: cut off after a key, or after its colon
    S("cut_after_key", "{\"name\": \"Ada\", \"age\"", {"name": "Ada", "age": None}),
    S("cut_after_key", "{\"name\": \"Ada\", \"age\":", {"name": "Ada", "age": None}),
    S("cut_after_key", "{\"a\": {\"b\": 1, \"c\"", {"a": {"b": 1, "c": None}}),
    S("cut_after_key", "[{\"id\": 1}, {\"id\":", [{"id": 1}, {"id": None}]),
    S("cut_after_key", "{\"result\": ", {"result": None}),
    S("cut_after_key", "{\"x\": 1, \"y\" :  ", {"x": 1, "y": None}),

    # prose_braces: braces in the prose before the JSON
    S("prose_braces", "Here is {the} result: {\"a\": 1}", {"a": 1}),
    S("prose_braces", "In Python you would write {} for an empty dict; as JSON: {\"empty\": {}}", {"empty": {}}),
    S("prose_braces", "Using the template {name} -> {value}, the output is:\n{\"name\": \"x\", \"value\": 2}", {"name": "x", "value": 2}),
    S("prose_braces", "The schema is {\"name\": string, \"age\": number}. Filled in: {\"name\": \"Ada\", \"age\": 36}", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("prose_braces", "Sets like {1, 2} are not JSON, so here is a list instead: [1, 2]", [1, 2], fmt="json_schema", schema={"type": "array", "items": {"type": "integer"}}),
    S("prose_braces", "Sure {user}! Your profile:\n\n{\"user\": \"ada\", \"plan\": \"pro\"}", {"user": "ada", "plan": "pro"}),

    # unescaped_quotes: double quotes inside a string left unescaped
    S("unescaped_quotes", "{\"quote\": \"She said \"hello\" and left\"}", {"quote": "She said \"hello\" and left"}),
    S("unescaped_quotes", "{\"title\": \"The \"best\" plan\", \"n\": 1}", {"title": "The \"best\" plan", "n": 1}),
    S("unescaped_quotes", "[\"a \"b\" c\"]", ["a \"b\" c"]),
    S("unescaped_quotes", "{\"html\": \"<a href=\"/x\">x</a>\"}", {"html": "<a href=\"/x\">x</a>"}),
    S("unescaped_quotes", "{\"cmd\": \"echo \"hi\"\"}", {"cmd": "echo \"hi\""}),

    # mixed: several faults at once
    S("mixed", "```json\n{name: 'Ada', age: 36,}\n```", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("mixed", "Sure! {'ok': True, 'errors': None, // none\n}", {"ok": True, "errors": None}),
    S("mixed", "{\u201cnote\u201d: \u201cline one\nline two\u201d, \u201cn\u201d: NaN", {"note": "line one\nline two", "n": None}),
    S("mixed", "Result:\n```\n[{id: 1, ok: True} {id: 2, ok: False},]\n```", [{"id": 1, "ok": True}, {"id": 2, "ok": False}]),
    S("mixed", "{\"tasks\": [{'title': 'write', 'done': True}, {title: \"test\", done: False", {"tasks": [{"title": "write", "done": True}, {"title": "test", "done": False}]}, fmt="json_schema", schema=TODO),
    S("mixed", "Here is {the} JSON:\n{\"a\": 1 \"b\": [1, 2,], /* c */ \"c\":", {"a": 1, "b": [1, 2], "c": None}),

    # valid_json: must come back byte for byte
    S("valid_json", "{\"a\": 1}", unchanged=True),
    S("valid_json", "{\n  \"name\": \"Ada\",\n  \"age\": 36\n}\n", unchanged=True, fmt="json_schema", schema=PERSON),
    S("valid_json", "  [1,2,3]  ", unchanged=True),
    S("valid_json", "{\"code\": \"```go\\nfunc main() {}\\n```\"}", unchanged=True),
    S("valid_json", "{\"url\": \"https://example.com//x\", \"s\": \"it's {fine}\"}", unchanged=True),
    S("valid_json", "{\"emoji\": \"\u2603\", \"esc\": \"\\u00e9\\n\\t\"}", unchanged=True),
    S("valid_json", "{\"name\": \"Ada\", \"age\": \"36\"}", unchanged=True, fmt="json_schema", schema=PERSON, schema_valid=False),
    S("valid_json", "{\"deep\": {\"er\": {\"est\": [[], {}, [[[]]]]}}}", unchanged=True),

    # no_json: JSON was asked for, but the answer holds none; left alone
    S("no_json", "I'm sorry, but I can't help with that request.", unchanged=True),
    S("no_json", "In Python use {} for an empty dict and [] for an empty list.", unchanged=True),
    S("no_json", "```go\npackage main\n\nfunc main() {}\n```", unchanged=True),
    S("no_json", "The answer depends on {context}; please tell me more.", unchanged=True),
    S("no_json", "", unchanged=True),

    # not_requested: no JSON was asked for (no response_format, or text);
    # every answer must come back byte for byte, however JSON-like
    S("not_requested", "In Python use {} for an empty dict and [] for an empty list.", unchanged=True, fmt=""),
    S("not_requested", "A minimal Go program:\n\n```go\npackage main\n\nfunc main() {}\n```", unchanged=True, fmt=""),
    S("not_requested", "Here is the config:\n```json\n{\"a\": 1, \"b\": 2,}\n```", unchanged=True, fmt="text"),
    S("not_requested", "{'name': 'Ada', 'age': 36}", unchanged=True, fmt=""),
    S("not_requested", "The set {1, 2, 3} has three elements; {x | x > 0} is infinite.", unchanged=True, fmt="text"),
    S("not_requested", "Use `${HOME}` in shell and `{{name}}` in Mustache templates.", unchanged=True, fmt=""),
    S("not_requested", "body { margin: 0; padding: 0 }", unchanged=True, fmt="text"),
    S("not_requested", "{\"items\": [1, 2", unchanged=True, fmt=""),
]

# ----------------------------------------------------------- held-out split
heldout = [
    S("fence", "```json\n{\"lang\": \"go\", \"version\": \"1.26\"}\n```", {"lang": "go", "version": "1.26"}),
    S("fence", "Of course. Here is the JSON you asked for:\n\n```json\n[\n  {\"sku\": \"A1\", \"qty\": 2},\n  {\"sku\": \"B7\", \"qty\": 1}\n]\n```\n\nLet me know if the quantities are wrong.", [{"sku": "A1", "qty": 2}, {"sku": "B7", "qty": 1}]),
    S("fence", "```javascript\n{\"city\": \"Kyoto\", \"temp_c\": 22.1, \"conditions\": \"clear\"}\n```", {"city": "Kyoto", "temp_c": 22.1, "conditions": "clear"}, fmt="json_schema", schema=WEATHER),
    S("fence", "~~~\n{\"ok\": false}\n~~~", {"ok": False}),
    S("fence", "```json\n{\"label\": \"neutral\", \"score\": 0.5}\n```\n```\n(confidence is low)\n```", {"label": "neutral", "score": 0.5}, fmt="json_schema", schema=SENTIMENT),

    S("trailing_text", "{\"ingredients\": [\"flour\", \"water\", \"salt\"]}\n\nEnjoy your bread!", {"ingredients": ["flour", "water", "salt"]}),
    S("trailing_text", "{\"name\": \"Grace\", \"age\": 85} -- note that age is as of 1991.", {"name": "Grace", "age": 85}, fmt="json_schema", schema=PERSON),
    S("trailing_text", "[1, 2, 3] <- the first three natural numbers", [1, 2, 3]),
    S("trailing_text", "{\"done\": true}\n```", {"done": True}),
    S("trailing_text", "{\"k\": \"v\"}\n\n(If you need {more} fields, ask.)", {"k": "v"}),

    S("trailing_comma", "{\"x\": 10, \"y\": 20, }", {"x": 10, "y": 20}),
    S("trailing_comma", "[\"a\", \"b\", \"c\", ]", ["a", "b", "c"]),
    S("trailing_comma", "{\"tasks\": [{\"title\": \"ship\", \"done\": false,},],}", {"tasks": [{"title": "ship", "done": False}]}, fmt="json_schema", schema=TODO),
    S("trailing_comma", "{\"a\": [1,\n  2,\n  3,\n],\n}", {"a": [1, 2, 3]}),
    S("trailing_comma", "{\"nested\": {\"k\": \"v\",}, \"list\": [{},],}", {"nested": {"k": "v"}, "list": [{}]}),

    S("truncated", "{\"steps\": [\"mix\", \"knead\", \"bake", {"steps": ["mix", "knead", "bake"]}),
    S("truncated", "{\"user\": {\"name\": \"Lin\", \"langs\": [\"go\", \"rust\"]", {"user": {"name": "Lin", "langs": ["go", "rust"]}}),
    S("truncated", "[{\"a\": 1}, {\"a\": 2}, {\"a\": 3", [{"a": 1}, {"a": 2}, {"a": 3}]),
    S("truncated", "{\"name\": \"Ada\", \"age\": 36", {"name": "Ada", "age": 36}, fmt="json_schema", schema=PERSON),
    S("truncated", "{\"text\": \"Chapter 1\\nIt was a bright cold day in April, and the clocks", {"text": "Chapter 1\nIt was a bright cold day in April, and the clocks"}),

    S("unquoted_keys", "{title: \"Dune\", author: \"Herbert\", year: 1965}", {"title": "Dune", "author": "Herbert", "year": 1965}),
    S("unquoted_keys", "{\n  name: \"Grace\",\n  age: 85\n}", {"name": "Grace", "age": 85}, fmt="json_schema", schema=PERSON),
    S("unquoted_keys", "{data: [{x: 1, y: 2}], meta: {count: 1}}", {"data": [{"x": 1, "y": 2}], "meta": {"count": 1}}),
    S("unquoted_keys", "{first_name: \"Ann\", last-name: \"Lee\"}", {"first_name": "Ann", "last-name": "Lee"}),
    S("unquoted_keys", "{_id: \"x1\", count2: 5}", {"_id": "x1", "count2": 5}),

    S("single_quotes", "{'city': 'Quito', 'temp_c': 14}", {"city": "Quito", "temp_c": 14}, fmt="json_schema", schema=WEATHER),
    S("single_quotes", "{'items': ['a', 'b'], 'total': 2}", {"items": ["a", "b"], "total": 2}),
    S("single_quotes", "{'note': 'say \"cheese\"'}", {"note": "say \"cheese\""}),
    S("single_quotes", "[{'k': 'v'}, {'k': 'w'}]", [{"k": "v"}, {"k": "w"}]),
    S("single_quotes", "{'greeting': 'Hello, world'}", {"greeting": "Hello, world"}),

    S("python_literals", "{\"valid\": False, \"reason\": None}", {"valid": False, "reason": None}),
    S("python_literals", "{'enabled': True, 'max': 10}", {"enabled": True, "max": 10}),
    S("python_literals", "[None, None]", [None, None]),
    S("python_literals", "{\"tasks\": [{\"title\": \"deploy\", \"done\": True}]}", {"tasks": [{"title": "deploy", "done": True}]}, fmt="json_schema", schema=TODO),
    S("python_literals", "{\"a\": {\"b\": [True, {\"c\": False}]}}", {"a": {"b": [True, {"c": False}]}}),

    S("nan_infinity", "{\"p_value\": NaN}", {"p_value": None}),
    S("nan_infinity", "{\"min\": -Infinity, \"max\": Infinity, \"n\": 3}", {"min": None, "max": None, "n": 3}),
    S("nan_infinity", "[NaN, NaN]", [None, None]),
    S("nan_infinity", "{\"scores\": [0.5, Infinity, 0.25]}", {"scores": [0.5, None, 0.25]}),
    S("nan_infinity", "{\"x\": NaN, \"y\": 1e3}", {"x": None, "y": 1000}),

    S("comments", "{\n  \"port\": 8080, // default\n  \"host\": \"localhost\"\n}", {"port": 8080, "host": "localhost"}),
    S("comments", "{/* person */ \"name\": \"Lin\", \"age\": 30}", {"name": "Lin", "age": 30}, fmt="json_schema", schema=PERSON),
    S("comments", "[\"a\", /* \"b\", */ \"c\"]", ["a", "c"]),
    S("comments", "// generated\n{\"v\": 2}", {"v": 2}),
    S("comments", "{\n  \"a\": 1,\n  // \"b\": 2,\n  \"c\": 3\n}", {"a": 1, "c": 3}),

    S("missing_commas", "{\"x\": 1\n\"y\": 2}", {"x": 1, "y": 2}),
    S("missing_commas", "[\"a\" \"b\" \"c\"]", ["a", "b", "c"]),
    S("missing_commas", "{\"name\": \"Lin\" \"age\": 30}", {"name": "Lin", "age": 30}, fmt="json_schema", schema=PERSON),
    S("missing_commas", "{\"a\": {\"b\": 1} \"c\": [2] \"d\": true}", {"a": {"b": 1}, "c": [2], "d": True}),
    S("missing_commas", "[[1, 2] [3, 4]]", [[1, 2], [3, 4]]),

    S("control_chars", "{\"lyrics\": \"La la la\nLa la\"}", {"lyrics": "La la la\nLa la"}),
    S("control_chars", "{\"sql\": \"SELECT *\n  FROM t\n  WHERE x = 1\"}", {"sql": "SELECT *\n  FROM t\n  WHERE x = 1"}),
    S("control_chars", "[\"tab\there\"]", ["tab\there"]),
    S("control_chars", "{\"a\": \"x\ny\", \"b\": \"z\"}", {"a": "x\ny", "b": "z"}),
    S("control_chars", "{\"msg\": \"Dear team,\n\nThanks!\n\u2014 Ada\"}", {"msg": "Dear team,\n\nThanks!\n\u2014 Ada"}),

    S("smart_quotes", "{\u201ctitle\u201d: \u201cEmma\u201d, \u201cyear\u201d: 1815}", {"title": "Emma", "year": 1815}),
    S("smart_quotes", "{\u201cname\u201d: \u201cLin\u201d, \u201cage\u201d: 30}", {"name": "Lin", "age": 30}, fmt="json_schema", schema=PERSON),
    S("smart_quotes", "[\u2018x\u2019, \u2018y\u2019]", ["x", "y"]),
    S("smart_quotes", "{\u201ca\u201d: [\u201cb\u201d, \u201cc\u201d]}", {"a": ["b", "c"]}),
    S("smart_quotes", "{\"say\": \u201cIt\u2019s fine\u201d}", {"say": "It\u2019s fine"}),

    S("cut_after_key", "{\"title\": \"Emma\", \"year\"", {"title": "Emma", "year": None}),
    S("cut_after_key", "{\"title\": \"Emma\", \"year\":", {"title": "Emma", "year": None}),
    S("cut_after_key", "[{\"k\": 1}, {\"k\"", [{"k": 1}, {"k": None}]),
    S("cut_after_key", "{\"a\": [1, 2], \"b\": {\"c\":", {"a": [1, 2], "b": {"c": None}}),
    S("cut_after_key", "{\"status\"", {"status": None}),

    S("prose_braces", "As requested ({json} only), here it is: {\"k\": 1}", {"k": 1}),
    S("prose_braces", "I replaced {x} with the real value:\n\n{\"x\": 42}", {"x": 42}),
    S("prose_braces", "Format: {city}, {temp}. JSON: {\"city\": \"Oslo\", \"temp_c\": 3}", {"city": "Oslo", "temp_c": 3}, fmt="json_schema", schema=WEATHER),
    S("prose_braces", "Think of it as {key: value} pairs. {\"key\": \"value\"}", {"key": "value"}),
    S("prose_braces", "An example would be {\"name\": \"<name>\", \"age\": \"<age>\"}; for you: {\"name\": \"Lin\", \"age\": 30}", {"name": "Lin", "age": 30}, fmt="json_schema", schema=PERSON),

    S("unescaped_quotes", "{\"review\": \"The \"new\" version is great\"}", {"review": "The \"new\" version is great"}),
    S("unescaped_quotes", "{\"a\": \"x \"y\" z\", \"b\": 2}", {"a": "x \"y\" z", "b": 2}),
    S("unescaped_quotes", "[\"\"quoted\" word\"]", ["\"quoted\" word"]),
    S("unescaped_quotes", "{\"dialog\": \"He asked \"why?\" and I said \"because\".\"}", {"dialog": "He asked \"why?\" and I said \"because\"."}),

    S("mixed", "Here it is:\n```json\n{'name': 'Lin', 'age': 30, // years\n}\n```", {"name": "Lin", "age": 30}, fmt="json_schema", schema=PERSON),
    S("mixed", "{ok: True, count: NaN, items: ['a' 'b']}", {"ok": True, "count": None, "items": ["a", "b"]}),
    S("mixed", "Result for {query}:\n{\u201cresults\u201d: [{\u201cid\u201d: 1}, {\u201cid\u201d: 2},", {"results": [{"id": 1}, {"id": 2}]}),
    S("mixed", "{\"text\": \"a\nb\", \"flag\": None \"n\": 1,}", {"text": "a\nb", "flag": None, "n": 1}),
    S("mixed", "```\n{\"tasks\": [{title: 'a', done: False}, {title: 'b', done:", {"tasks": [{"title": "a", "done": False}, {"title": "b", "done": None}]}, fmt="json_schema", schema=TODO, schema_valid=False),

    S("valid_json", "{\"k\":\"v\"}", unchanged=True),
    S("valid_json", "[\n  {\"id\": 1},\n  {\"id\": 2}\n]", unchanged=True),
    S("valid_json", "{\"s\": \"// not a comment\", \"t\": \"/* nor this */\"}", unchanged=True),
    S("valid_json", "{\"name\": \"Lin\", \"age\": 30}", unchanged=True, fmt="json_schema", schema=PERSON),
    S("valid_json", "\n\n{\"trailing\": \"newlines\"}\n\n", unchanged=True),
    S("valid_json", "{\"quote\": \"\\\"quoted\\\"\", \"smart\": \"\u201chi\u201d\"}", unchanged=True),
    S("valid_json", "{\"label\": \"great\", \"score\": 2}", unchanged=True, fmt="json_schema", schema=SENTIMENT, schema_valid=False),

    S("no_json", "Sorry, I cannot produce that.", unchanged=True),
    S("no_json", "Use {name} as a placeholder in the template.", unchanged=True),
    S("no_json", "int main(void) { return 0; }", unchanged=True),
    S("no_json", "The empty set is written {} or \u2205.", unchanged=True),

    S("not_requested", "Python: `d = {}`; JavaScript: `const o = {};`", unchanged=True, fmt=""),
    S("not_requested", "```go\nfunc main() {}\n```", unchanged=True, fmt="text"),
    S("not_requested", "{\"a\": 1, \"b\": 2,}", unchanged=True, fmt=""),
    S("not_requested", "Here is {the} result: {\"a\": 1}", unchanged=True, fmt="text"),
    S("not_requested", "\\frac{a}{b} is LaTeX for a fraction.", unchanged=True, fmt=""),
    S("not_requested", "[1] Smith, J. (2020). A study. {Journal}, 3(2).", unchanged=True, fmt=""),
]


def write(name, rows):
    counts = {}
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        for r in rows:
            c = r["category"]
            counts[c] = counts.get(c, 0) + 1
            row = {"id": f"{name.split('.')[0]}-{c}-{counts[c]:02d}"}
            row.update(r)
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


write("dev.jsonl", dev)
write("heldout.jsonl", heldout)
