// Benchproof's offline verifier: checks a citation receipt or a saved signed answer against the
// log's vkey (and, optionally, witness vkeys and a quorum), in the browser, with no network.
//
// It checks exactly what `benchproof verify-citation` and `benchproof verify-answer` check, in
// the same order and under the same check names (verifier/receipts.py, verifier/answers.py are
// the specification); every check is shown in words, and the page's verdict is kept in
// #verdict's data-verdict ("pass", "fail" or "error") and data-check (the failing check).
//
// Ed25519 signatures are checked by the browser's WebCrypto when it has Ed25519, otherwise by
// the copy of noble-ed25519 bundled above this script (`noble`); hashes by WebCrypto's SHA-256.

"use strict";

const RECEIPT_HEADER = "benchproof citation receipt v1";
const RECEIPT_CONTEXT = "benchproof citation receipt v1\n";
const ANSWER_FORMAT = "benchproof signed answer v1";
const LOG_KEY_TYPE = 0x01; // a signed-note Ed25519 key
const WITNESS_KEY_TYPE = 0x04; // a cosignature/v1 Ed25519 key
const MAX_SIGNATURES = 100; // signature lines a note may carry (C2SP signed-note, sumdb/note)
const MAX_TIMESTAMP = (1n << 63n) - 1n;
const EM_DASH = "\u2014 ";

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A check that did not pass; the step that runs it gives its name. */
class Failed extends Error {}
/** Input the page cannot use at all (a key that is not a vkey): nothing was checked. */
class BadInput extends Error {}

function fail(detail) {
  throw new Failed(detail);
}

// ---------------------------------------------------------------------------------------------
// Bytes, base64, hashes

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function sameBytes(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function fromBinary(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function toBase64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** The bytes of standard padded base64, or null unless `text` is their one canonical spelling
 * (whole quads, the bits the padding leaves unused all zero): what every base64 field of a
 * receipt, a note signature and a vkey must be. */
function canonicalBase64(text) {
  if (!BASE64.test(text)) return null;
  const pad = text.length - text.replace(/=+$/, "").length;
  if (pad) {
    const last = ALPHABET.indexOf(text[text.length - pad - 1]);
    if (last & (pad === 2 ? 0x0f : 0x03)) return null;
  }
  return fromBinary(text);
}

/** Strict base64 that may leave padding bits set (Python's a2b_base64 strict_mode), as a
 * checkpoint's root line is read. */
function strictBase64(text) {
  return BASE64.test(text) ? fromBinary(text) : null;
}

/** Lenient base64, as Python's base64.b64decode reads a DSSE payload: characters outside the
 * alphabet are dropped. */
function lenientBase64(text) {
  const kept = text.replace(/[^A-Za-z0-9+/=]/g, "");
  const data = kept.replace(/=+$/, "");
  if (data.includes("=") || data.length % 4 === 1) return null;
  return fromBinary(data + "=".repeat((4 - (data.length % 4)) % 4));
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

// RFC 9162 §2.1.1: leaves are hashed with a 0x00 prefix, interior nodes with 0x01.
const leafHash = (leaf) => sha256(concat(Uint8Array.of(0), leaf));
const nodeHash = (left, right) => sha256(concat(Uint8Array.of(1), left, right));

// ---------------------------------------------------------------------------------------------
// Ed25519: WebCrypto when the browser has it, else the bundled noble-ed25519.

// RFC 8032 §7.1, test 1: the empty message under a known key. Both engines must pass it (and
// refuse it with one signature bit flipped) before the page uses them.
const RFC8032_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const RFC8032_SIGNATURE =
  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555" +
  "fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

function fromHex(text) {
  return Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
}

async function webCryptoVerify(publicKey, signature, message) {
  const key = await crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, [
    "verify",
  ]);
  return crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
}

async function nobleVerify(publicKey, signature, message) {
  // zip215: false is RFC 8032 / FIPS 186-5 verification, as the Python verifier's OpenSSL does.
  return noble.verifyAsync(signature, message, publicKey, { zip215: false });
}

async function passesSelfTest(verify) {
  const pub = fromHex(RFC8032_PUBLIC);
  const sig = fromHex(RFC8032_SIGNATURE);
  const flipped = sig.slice();
  flipped[10] ^= 1;
  try {
    return (
      (await verify(pub, sig, new Uint8Array(0))) === true &&
      (await verify(pub, flipped, new Uint8Array(0))) === false
    );
  } catch {
    return false;
  }
}

let engine = null; // { name, verify } once chosen

async function chooseEngine() {
  const forceNoble = /(^|[#&])engine=noble\b/.test(location.hash);
  if (!forceNoble && (await passesSelfTest(webCryptoVerify))) {
    return { name: "webcrypto", words: "the browser's own Ed25519 (WebCrypto)", verify: webCryptoVerify };
  }
  if (await passesSelfTest(nobleVerify)) {
    return { name: "noble", words: "the bundled noble-ed25519 " + NOBLE_VERSION, verify: nobleVerify };
  }
  throw new BadInput("this browser can check no Ed25519 signature (neither engine passed its self-test)");
}

/** Whether `signature` is `publicKey`'s Ed25519 signature of `message`; never throws. */
async function ed25519(publicKey, signature, message) {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    return (await engine.verify(publicKey, signature, message)) === true;
  } catch {
    return false; // a public key that is not a curve point, say
  }
}

// ---------------------------------------------------------------------------------------------
// Keys (C2SP signed-note vkeys: name+<8 hex key ID>+base64(type || public key))

// What Python's str.isspace() calls space: a key name holds none of it, and no "+".
const SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

function validKeyName(name) {
  return name.length > 0 && !name.includes("+") && !SPACE.test(name) && name.isWellFormed();
}

/** The 4-byte key ID: SHA-256(name || "\n" || type || public key)[:4]. */
async function keyId(name, type, publicKey) {
  return (await sha256(concat(utf8.encode(name + "\n"), Uint8Array.of(type), publicKey))).slice(0, 4);
}

async function parseVkey(text, type, what) {
  const plus = text.indexOf("+");
  const second = plus < 0 ? -1 : text.indexOf("+", plus + 1);
  if (second < 0) throw new BadInput(`${what} is not a vkey (name+keyid+key)`);
  const name = text.slice(0, plus);
  const id = text.slice(plus + 1, second);
  if (!validKeyName(name)) throw new BadInput(`${what} has an invalid name ${JSON.stringify(name)}`);
  if (!/^[0-9a-fA-F]{8}$/.test(id)) throw new BadInput(`${what} ${name}: the key ID is not 8 hex digits`);
  const typed = canonicalBase64(text.slice(second + 1));
  if (typed === null) throw new BadInput(`${what} ${name}: the key is not base64`);
  if (typed[0] !== type) {
    const hint = type === LOG_KEY_TYPE ? " (a witness key? those go below)" : " (a log's key?)";
    throw new BadInput(
      `${what} ${name}: signature type 0x${(typed[0] ?? 0).toString(16).padStart(2, "0")}, not 0x0${type}${hint}`,
    );
  }
  if (typed.length !== 33) throw new BadInput(`${what} ${name}: an Ed25519 key is 32 bytes`);
  const publicKey = typed.slice(1);
  const computed = await keyId(name, type, publicKey);
  if (toHex(computed) !== id.toLowerCase()) {
    throw new BadInput(`${what} ${name}: the key ID does not match the name and key`);
  }
  return { name, keyId: computed, publicKey, vkey: text };
}

// ---------------------------------------------------------------------------------------------
// Signed notes and checkpoints (C2SP signed-note, tlog-checkpoint, tlog-cosignature)

/** The note's body (its text, final newline included) and its signature lines, each
 * well-formed: "— <name> <canonical base64 of key ID || signature>". */
function parseNote(noteBytes) {
  let text;
  try {
    text = strictUtf8.decode(noteBytes);
  } catch {
    fail("the checkpoint note is not UTF-8");
  }
  if (/[\x00-\x09\x0b-\x1f]/.test(text)) fail("the checkpoint note holds a control character");
  const split = text.lastIndexOf("\n\n");
  if (split < 0) fail("the checkpoint note has no blank line before its signatures");
  const body = text.slice(0, split + 1);
  const block = text.slice(split + 2);
  if (!block || !block.endsWith("\n")) fail("the checkpoint note's signature block is empty or unterminated");
  const lines = block.slice(0, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) fail(`the checkpoint note has more than ${MAX_SIGNATURES} signatures`);
  const parsed = lines.map((line) => {
    if (!line.startsWith(EM_DASH)) fail("a line of the checkpoint's signature block is not a signature");
    const rest = line.slice(EM_DASH.length);
    const space = rest.indexOf(" ");
    const name = space < 0 ? rest : rest.slice(0, space);
    const encoded = space < 0 ? "" : rest.slice(space + 1);
    if (!validKeyName(name) || !encoded) fail("a signature line of the checkpoint is malformed");
    const raw = canonicalBase64(encoded);
    if (raw === null) fail(`the signature by ${name} is not canonical base64`);
    if (raw.length < 5) fail(`the signature by ${name} is shorter than a key ID and one byte`);
    return { name, keyId: raw.slice(0, 4), rest: raw.slice(4) };
  });
  return { body, bodyBytes: utf8.encode(body), lines: parsed };
}

/** A checkpoint body: origin, size and root lines (extension lines may follow). */
function parseCheckpointBody(text) {
  const lines = text.split("\n");
  if (lines.length < 4 || lines[lines.length - 1] !== "" || !lines[0]) {
    fail("the checkpoint is not origin, size and root lines");
  }
  if (!/^(0|[1-9][0-9]*)$/.test(lines[1])) fail(`the checkpoint's size ${JSON.stringify(lines[1])} is not a number`);
  const root = strictBase64(lines[2]);
  if (root === null || root.length !== 32) fail("the checkpoint's root is not 32 bytes of base64");
  return { origin: lines[0], size: BigInt(lines[1]), root };
}

const byKey = (key) => (line) => line.name === key.name && sameBytes(line.keyId, key.keyId);

/** Open a checkpoint note with the log key: every signature line well-formed, exactly one by
 * the log key (name and key ID), and that one verifies over the body. */
async function openCheckpoint(noteBytes, logKey) {
  const note = parseNote(noteBytes);
  const own = note.lines.filter(byKey(logKey));
  if (own.length === 0) fail("no signature line on the checkpoint is by this log's key");
  if (!(await ed25519(logKey.publicKey, own[0].rest, note.bodyBytes))) {
    fail("the log key's signature on the checkpoint does not verify");
  }
  if (own.length > 1) fail("the checkpoint carries more than one signature line by the log's key");
  const checkpoint = parseCheckpointBody(note.body);
  return { note, checkpoint, others: note.lines.length - 1 };
}

/** Whether `witness` cosigned the note: { timestamp } of its latest cosignature/v1 over the
 * note's body, or null when no line is by it (name and key ID). Every line by a given witness
 * must verify: an edited checkpoint or a forged cosignature fails, it is never just skipped. */
async function cosignatureBy(witness, note) {
  let latest = null;
  for (const line of note.lines.filter(byKey(witness))) {
    // key ID (4 bytes, already split off), timestamp (8, big-endian), Ed25519 signature (64)
    if (line.rest.length !== 8 + 64) fail(`the cosignature by ${witness.name} is malformed`);
    const timestamp = new DataView(line.rest.buffer, line.rest.byteOffset).getBigUint64(0);
    if (timestamp > MAX_TIMESTAMP) fail(`the cosignature by ${witness.name} has a timestamp beyond 2^63 - 1`);
    // The signed message: "cosignature/v1\n", "time <timestamp>\n", then the whole note body.
    const message = concat(utf8.encode(`cosignature/v1\ntime ${timestamp}\n`), note.bodyBytes);
    if (!(await ed25519(witness.publicKey, line.rest.slice(8), message))) {
      fail(`the cosignature by ${witness.name} does not verify over this checkpoint`);
    }
    if (latest === null || timestamp > latest) latest = timestamp;
  }
  return latest === null ? null : { timestamp: latest };
}

/** The witness check on a checkpoint note: at least `quorum` of the given witnesses cosigned
 * it. Without witness keys it passes, saying how many other lines it carries (unchecked). */
async function checkWitnesses(opened, witnesses, quorum) {
  if (witnesses.length === 0) {
    const n = opened ? opened.others : 0;
    return `no witness keys were given, so none was required; the checkpoint carries ${n} other signature line(s), not checked`;
  }
  if (!opened) fail("the answer was saved without a checkpoint: no witness can have cosigned it");
  const counted = [];
  const missing = [];
  for (const witness of witnesses) {
    const got = await cosignatureBy(witness, opened.note);
    if (got === null) missing.push(witness.name);
    else counted.push(`${witness.name} at ${new Date(Number(got.timestamp) * 1000).toISOString()}`);
  }
  const said = `${counted.length} of ${witnesses.length} witness(es) cosigned it, ${quorum} needed`;
  if (counted.length < quorum) fail(`${said}; no cosignature by ${missing.join(", ")}`);
  return `${said}: ${counted.join("; ")}`;
}

// ---------------------------------------------------------------------------------------------
// RFC 8785 canonical JSON and the Merkle inclusion proof

/** RFC 8785 (JCS) text of a parsed JSON value: ECMAScript number and string spelling (what
 * JSON.stringify does), object keys sorted by UTF-16 code units (what sort() does). */
function canonicalJson(value) {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) fail("the manifest holds a number JSON cannot represent");
    return JSON.stringify(value);
  }
  if (typeof value === "string") {
    if (!value.isWellFormed()) fail("the manifest holds a string that is not Unicode");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return "[" + value.map(canonicalJson).join(",") + "]";
  const keys = Object.keys(value).sort();
  return "{" + keys.map((k) => canonicalJson(k) + ":" + canonicalJson(value[k])).join(",") + "}";
}

/** RFC 9162 §2.1.3.2: the proof leads from the leaf hash at `index` to the root of a tree of
 * `size` leaves (BigInts: positions may pass 2^32). */
async function verifyInclusion(index, size, leaf, proof, root) {
  if (!(0n <= index && index < size)) fail(`leaf ${index} is not in a tree of size ${size}`);
  if (leaf.length !== 32 || root.length !== 32 || proof.some((p) => p.length !== 32)) {
    fail("every hash must be 32 bytes");
  }
  let fn = index;
  let sn = size - 1n;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0n) fail("the inclusion proof is longer than the tree is deep");
    if (fn & 1n || fn === sn) {
      r = await nodeHash(p, r);
      while (!(fn & 1n) && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) fail("the inclusion proof is shorter than the tree is deep");
  if (!sameBytes(r, root)) fail("the inclusion proof does not lead to the checkpoint's root");
}

// ---------------------------------------------------------------------------------------------
// Running checks in order: the first that fails stops the rest (as the CLI does).

function parseJson(bytes, what) {
  try {
    return JSON.parse(strictUtf8.decode(bytes));
  } catch {
    fail(`${what} is not JSON text`);
  }
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** Run `steps` ([check, words, fn]) in order; the result lists each as passed, failed or not
 * checked, and names the check that failed. A step's fn may return its detail, or
 * { absent: detail } for something the file does not carry (not a failure). */
async function runSteps(steps) {
  const shown = [];
  let failed = null;
  for (const [check, words, fn] of steps) {
    if (failed) {
      shown.push({ check, words, state: "skipped", detail: "not checked: an earlier check failed" });
      continue;
    }
    try {
      const got = await fn();
      if (got && got.absent) shown.push({ check, words, state: "absent", detail: got.absent });
      else shown.push({ check, words, state: "passed", detail: got || "" });
    } catch (exc) {
      if (!(exc instanceof Failed)) throw exc;
      failed = { check, words, detail: exc.message };
      shown.push({ check, words, state: "failed", detail: exc.message });
    }
  }
  return { shown, failed };
}

// ---------------------------------------------------------------------------------------------
// Citation receipts (verifier/receipts.py)

const STATEMENT_FIELDS = {
  accessed: "string",
  entryIndex: "integer",
  evidenceLevel: "string",
  origin: "string",
  permalink: "string",
  root: "string",
  runDigest: "string",
  treeSize: "integer",
};

function hasShape(value, fields, exact) {
  if (!isObject(value)) return false;
  if (exact && Object.keys(value).some((k) => !(k in fields))) return false;
  return Object.entries(fields).every(([k, type]) =>
    type === "integer" ? Number.isSafeInteger(value[k]) : typeof value[k] === type,
  );
}

function receiptHeader(s) {
  return [
    RECEIPT_HEADER,
    `record: ${s.permalink}`,
    `run: ${s.runDigest}`,
    `accessed: ${s.accessed}`,
    `evidence: ${s.evidenceLevel}`,
    `log: ${s.origin} at tree size ${s.treeSize}`,
    "verify: benchproof verify-citation <file> --log-key <the log's vkey file>",
    "",
  ];
}

// An instant as the log writes its own; Python's \d is any Unicode decimal digit.
const INSTANT = /^\p{Nd}{4}-\p{Nd}{2}-\p{Nd}{2}T\p{Nd}{2}:\p{Nd}{2}:\p{Nd}{2}\.\p{Nd}{3}Z$/u;

async function verifyReceipt(data, logKey, witnesses, quorum) {
  let header, parts, statement, opened, leaf;
  const steps = [
    ["format", "The file is a citation receipt, laid out line by line as the format says", () => {
      let text;
      try {
        text = strictUtf8.decode(data);
      } catch {
        fail("the file is not UTF-8 text");
      }
      const lines = text.split("\n");
      if (lines.length < 13 || lines[0] !== RECEIPT_HEADER || lines[lines.length - 1] !== "") {
        fail(`not a receipt: it must start with "${RECEIPT_HEADER}" and end with a newline`);
      }
      header = lines.slice(0, 8);
      const rest = lines.slice(8, -1);
      const field = (line, name) => {
        if (!line.startsWith(name + " ")) fail(`expected a "${name}" line, found "${line.slice(0, 40)}"`);
        const bytes = canonicalBase64(line.slice(name.length + 1));
        if (bytes === null) fail(`the ${name} is not canonical base64`);
        return bytes;
      };
      parts = {
        statement: field(rest[0], "statement"),
        signature: field(rest[1], "signature"),
        checkpoint: field(rest[2], "checkpoint"),
        entry: field(rest[3], "entry"),
        proof: rest.slice(4).map((line) => field(line, "proof")),
      };
      return `${rest.length} lines after the header, each canonical base64`;
    }],
    ["statement", "The statement the log signed can be read", () => {
      statement = parseJson(parts.statement, "the statement");
      if (!hasShape(statement, STATEMENT_FIELDS, true)) fail("the statement is not a citation statement");
      return `run ${statement.runDigest}, entry ${statement.entryIndex} of ${statement.origin}`;
    }],
    ["signature", "The log's key signed this statement", async () => {
      const message = concat(utf8.encode(RECEIPT_CONTEXT), parts.statement);
      if (!(await ed25519(logKey.publicKey, parts.signature, message))) {
        fail("the statement is not signed by this log's key");
      }
      return `signed by ${logKey.name}`;
    }],
    ["checkpoint", "The log's key signed the checkpoint (the log's tree head) in the receipt", async () => {
      opened = await openCheckpoint(parts.checkpoint, logKey);
      return `a tree of ${opened.checkpoint.size} entries, signed by ${logKey.name}`;
    }],
    ["witnesses", "Enough witnesses cosigned that checkpoint", () => checkWitnesses(opened, witnesses, quorum)],
    ["origin", "The statement, the checkpoint and the key all name the same log", () => {
      if (opened.checkpoint.origin !== logKey.name || statement.origin !== logKey.name) {
        fail("the statement, checkpoint and key name other logs");
      }
      return logKey.name;
    }],
    ["checkpoint", "The checkpoint is the one the statement names (its size and root)", () => {
      const { size, root } = opened.checkpoint;
      if (size !== BigInt(statement.treeSize) || toBase64(root) !== statement.root) {
        fail(`the statement names a checkpoint of ${statement.treeSize} entries, the receipt holds one of ${size}`);
      }
      return `${size} entries, root ${statement.root}`;
    }],
    ["inclusion", "The entry is in the log's tree at the position the statement gives (Merkle proof)", async () => {
      await verifyInclusion(
        BigInt(statement.entryIndex),
        opened.checkpoint.size,
        await leafHash(parts.entry),
        parts.proof,
        opened.checkpoint.root,
      );
      return `entry ${statement.entryIndex}, ${parts.proof.length} proof hash(es)`;
    }],
    ["entry", "That entry is the run's ingest record at that position", () => {
      const LEAF = { seq: "integer", recordedAt: "string", type: "string", subject: "string" };
      leaf = parseJson(parts.entry, "the entry");
      if (!hasShape(leaf, LEAF, false) || !hasShape(leaf.envelope, { payload: "string" }, false)) {
        fail("not an entry's leaf");
      }
      if (leaf.seq !== statement.entryIndex || leaf.type !== "run.ingested.v1") {
        fail("the entry is not the run's run.ingested at that index");
      }
      return `recorded ${leaf.recordedAt}`;
    }],
    ["digest", "The run's manifest in that entry hashes to the cited digest", async () => {
      const payload = lenientBase64(leaf.envelope.payload);
      if (payload === null) fail("the entry holds no run manifest: its payload is not base64");
      const wire = parseJson(payload, "the entry's payload");
      if (!hasShape(wire, { runDigest: "string" }, false) || !isObject(wire.manifests) || !("run" in wire.manifests)) {
        fail("the entry holds no run manifest");
      }
      // The spec digest: SHA-256 of RFC 8785 of the run manifest's apiVersion, kind and spec.
      const run = wire.manifests.run;
      if (!isObject(run)) fail("the entry's run manifest is not a JSON object");
      const identity = {};
      for (const k of ["apiVersion", "kind", "spec"]) if (k in run) identity[k] = run[k];
      const computed = "sha256:" + toHex(await sha256(utf8.encode(canonicalJson(identity))));
      if (!(wire.runDigest === computed && computed === statement.runDigest && computed === leaf.subject)) {
        fail(`the run's manifest hashes to ${computed}, not ${statement.runDigest}`);
      }
      return computed;
    }],
    ["permalink", "The permalink names the cited run", () => {
      if (!statement.permalink.endsWith(`/runs/${statement.runDigest}`)) {
        fail("the permalink is not the run's digest form");
      }
      return statement.permalink;
    }],
    ["accessed", "The citation's access time is not before the run was recorded", () => {
      // Both in the log's fixed-width shape, so as strings their order is their time order.
      if (!INSTANT.test(statement.accessed) || !INSTANT.test(leaf.recordedAt) || statement.accessed < leaf.recordedAt) {
        fail("the access instant is before the entry was recorded");
      }
      return `accessed ${statement.accessed}, recorded ${leaf.recordedAt}`;
    }],
    ["bytes", "The receipt's readable header says exactly what the signed statement says", () => {
      const expected = receiptHeader(statement);
      const at = expected.findIndex((line, i) => line !== header[i]);
      if (at >= 0) fail(`line ${at + 1} of the header is not the one the signed statement gives`);
      return "every line matches";
    }],
  ];
  const result = await runSteps(steps);
  if (!result.failed) {
    const s = statement;
    result.summary =
      `The run ${s.runDigest} (${s.permalink}) was entry ${s.entryIndex} of the log ${s.origin}, ` +
      `recorded ${leaf.recordedAt}, included in its signed checkpoint of ${s.treeSize} entries; ` +
      `the log's key certified that on ${s.accessed} the record was cited at evidence level ` +
      `${s.evidenceLevel}. The run's manifest hashes to the cited digest. Checked offline, ` +
      "with the log's public key only.";
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Saved signed answers (verifier/answers.py)

const ANSWER_FIELDS = {
  format: "string",
  server: "string",
  origin: "string",
  treeSize: "integer",
  target: "string",
  bodySha256: "string",
  signature: "string",
  body: "string",
};

async function verifyAnswer(data, logKey, witnesses, quorum) {
  let answer, opened;
  const steps = [
    ["format", "The file is a saved signed answer in the expected format", () => {
      answer = parseJson(data, "the file");
      const allowed = { ...ANSWER_FIELDS, checkpoint: "string" };
      if (!hasShape(answer, ANSWER_FIELDS, false) || Object.keys(answer).some((k) => !(k in allowed))) {
        fail("not a saved answer: a member is missing, unknown or of the wrong type");
      }
      if (answer.checkpoint !== undefined && answer.checkpoint !== null && typeof answer.checkpoint !== "string") {
        fail("its checkpoint is not the text of a signed note");
      }
      if (answer.format !== ANSWER_FORMAT) fail(`format ${JSON.stringify(answer.format)} is not "${ANSWER_FORMAT}"`);
      // Every signed field must fit on its line of the signed message.
      if (!answer.origin || answer.origin.includes("\n")) fail("the origin must be one non-empty line");
      if (answer.treeSize < 0) fail(`tree size ${answer.treeSize} is negative`);
      if (!/^\/[!-~]*$/.test(answer.target)) fail("the target is not a request target in normal form");
      if (!/^[0-9a-f]{64}$/.test(answer.bodySha256)) fail("the body digest must be 64 lowercase hex digits");
      return `the answer to ${answer.target} at tree size ${answer.treeSize}`;
    }],
    ["body", "The answer's text is the one its digest (bodySha256) names", async () => {
      if (toHex(await sha256(utf8.encode(answer.body))) !== answer.bodySha256) {
        fail("the body's SHA-256 is not bodySha256");
      }
      return `${utf8.encode(answer.body).length} bytes, SHA-256 ${answer.bodySha256}`;
    }],
    ["signature", "The log's key signed this answer, to this request, at this tree size", async () => {
      const space = answer.signature.indexOf(" ");
      const name = space < 0 ? answer.signature : answer.signature.slice(0, space);
      const raw = space < 0 ? null : canonicalBase64(answer.signature.slice(space + 1));
      if (raw === null || raw.length !== 4 + 64) {
        fail("not '<key name> <base64 of a 4-byte key hash and 64-byte signature>'");
      }
      if (name !== logKey.name || !sameBytes(raw.slice(0, 4), logKey.keyId)) {
        fail(`made by key ${JSON.stringify(name)} (${toHex(raw.slice(0, 4))}), not by ${logKey.name} (${toHex(logKey.keyId)})`);
      }
      // The five signed lines: context, origin, tree size, target, body digest.
      const message = `${ANSWER_FORMAT}\n${answer.origin}\n${answer.treeSize}\n${answer.target}\n${answer.bodySha256}\n`;
      if (!(await ed25519(logKey.publicKey, raw.slice(4), utf8.encode(message)))) {
        fail("the log key did not sign this body as the answer to this target at this tree size");
      }
      return `signed by ${logKey.name}`;
    }],
    // The checkpoint saved with the answer (optional) is checked as part of "witnesses", the
    // check the CLI names for all of it.
    ["witnesses", "The log's key signed the checkpoint saved with the answer, which covers its tree size", async () => {
      if (answer.checkpoint === undefined || answer.checkpoint === null) {
        if (witnesses.length) fail("the answer was saved without a checkpoint: no witness can have cosigned it");
        return { absent: "no checkpoint was saved with this answer (nothing to check)" };
      }
      opened = await openCheckpoint(utf8.encode(answer.checkpoint), logKey);
      const { origin, size } = opened.checkpoint;
      if (origin !== answer.origin || size < BigInt(answer.treeSize)) {
        fail(`the saved checkpoint (${origin}, ${size} entries) does not cover the answer's tree size ${answer.treeSize}`);
      }
      return `a tree of ${size} entries, signed by ${logKey.name}`;
    }],
    ["witnesses", "Enough witnesses cosigned that checkpoint", () =>
      opened || witnesses.length ? checkWitnesses(opened, witnesses, quorum) : { absent: "no checkpoint, and no witness keys given" }],
  ];
  const result = await runSteps(steps);
  if (!result.failed) {
    result.summary =
      `The log ${answer.origin}'s key signed this answer to ${answer.target} at tree size ` +
      `${answer.treeSize}` +
      (opened ? `, and a checkpoint of ${opened.checkpoint.size} entries` : "") +
      ". Checked offline, with the log's public key only.";
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Reading the inputs

/** The log key, the witness keys and the quorum from the form (BadInput if unusable). */
async function readKeys(logText, witnessText, quorumText) {
  const logLine = logText.trim();
  if (!logLine) throw new BadInput("give the log's key (its vkey, one line of text)");
  const logKey = await parseVkey(logLine, LOG_KEY_TYPE, "the log's key");
  const witnesses = [];
  for (const line of witnessText.split("\n").map((l) => l.trim())) {
    if (!line) continue;
    const witness = await parseVkey(line, WITNESS_KEY_TYPE, "a witness key");
    if (witnesses.some((w) => w.name === witness.name)) {
      throw new BadInput(`the witness ${witness.name} is given twice`);
    }
    witnesses.push(witness);
  }
  let quorum = witnesses.length; // by default every witness given must have cosigned
  const q = quorumText.trim();
  if (q) {
    quorum = /^[0-9]+$/.test(q) ? Number(q) : NaN;
    if (!(quorum >= 1 && quorum <= witnesses.length)) {
      throw new BadInput(`the quorum must be between 1 and the number of witness keys given (${witnesses.length})`);
    }
  }
  return { logKey, witnesses, quorum };
}

/** Check `data` (a receipt or a saved answer, as bytes) with the keys' texts. */
async function check(data, logText, witnessText, quorumText) {
  if (!crypto.subtle) throw new BadInput("this page needs a secure context (a file on disk, or https)");
  if (!engine) engine = await chooseEngine();
  const { logKey, witnesses, quorum } = await readKeys(logText, witnessText, quorumText);
  // Which kind of file: a receipt starts with its header line, a saved answer is a JSON object.
  const start = new TextDecoder().decode(data.slice(0, 64)).trimStart();
  if (start.startsWith("benchproof")) {
    return { kind: "citation receipt", ...(await verifyReceipt(data, logKey, witnesses, quorum)) };
  }
  if (start.startsWith("{")) {
    return { kind: "saved signed answer", ...(await verifyAnswer(data, logKey, witnesses, quorum)) };
  }
  throw new BadInput("this is neither a citation receipt nor a saved signed answer");
}

// ---------------------------------------------------------------------------------------------
// The page

const $ = (id) => document.getElementById(id);
let subjectFile = null; // { text, bytes }: a file read into the box, kept byte for byte

function subjectBytes() {
  const text = $("subject").value;
  if (subjectFile && subjectFile.text === text) return subjectFile.bytes;
  return utf8.encode(text);
}

/** What a file holds: a receipt or answer, a log key, or witness keys (by their type byte). */
function classify(text) {
  const lines = text.split("\n").map((l) => l.trim()).filter(Boolean);
  const typeOf = (line) => {
    const parts = line.split("+");
    const typed = parts.length >= 3 ? canonicalBase64(parts.slice(2).join("+")) : null;
    return typed && typed.length === 33 ? typed[0] : null;
  };
  if (lines.length && lines.every((l) => typeOf(l) === WITNESS_KEY_TYPE)) return "witness";
  if (lines.length === 1 && typeOf(lines[0]) === LOG_KEY_TYPE) return "log";
  return "subject";
}

async function takeFile(file, into) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let text;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    text = null;
  }
  const kind = into || (text === null ? "subject" : classify(text));
  if (kind === "log") $("logkey").value = text.trim();
  else if (kind === "witness") {
    const had = $("witnesses").value.trim();
    $("witnesses").value = (had ? had + "\n" : "") + text.trim();
  } else {
    subjectFile = { text: text ?? `(${file.name}: not text, ${bytes.length} bytes)`, bytes };
    $("subject").value = subjectFile.text;
  }
  showFiles(kind, file.name);
}

function showFiles(kind, name) {
  const where = { log: "logkey-name", witness: "witness-names", subject: "subject-name" }[kind];
  const el = $(where);
  el.textContent = kind === "witness" && el.textContent ? `${el.textContent}, ${name}` : name;
}

const STATE_WORDS = { passed: "passed", failed: "failed", skipped: "not checked", absent: "not present" };

function show(result) {
  const list = $("steps");
  list.replaceChildren();
  for (const step of result.shown) {
    const item = document.createElement("li");
    item.className = step.state;
    item.dataset.check = step.check;
    const words = document.createElement("span");
    words.className = "words";
    words.textContent = step.words;
    const state = document.createElement("strong");
    state.className = "state";
    state.textContent = STATE_WORDS[step.state];
    const detail = document.createElement("div");
    detail.className = "detail";
    detail.textContent = step.state === "skipped" ? "" : `(${step.check}) ${step.detail}`;
    item.append(words, ": ", state, detail);
    list.append(item);
  }
  const verdict = $("verdict");
  if (result.failed) {
    setVerdict("fail", result.failed.check, `Not verified. This ${result.kind} fails the check "${result.failed.check}": ${result.failed.detail}.`);
  } else {
    setVerdict("pass", "", `Verified. ${result.summary}`);
  }
  verdict.focus();
}

function setVerdict(state, checkName, text) {
  const verdict = $("verdict");
  verdict.className = state;
  verdict.dataset.verdict = state;
  verdict.dataset.check = checkName;
  verdict.textContent = text;
}

async function onCheck() {
  $("steps").replaceChildren();
  setVerdict("running", "", "Checking…");
  try {
    const data = subjectBytes();
    if (!data.length) throw new BadInput("give a citation receipt or a saved signed answer to check");
    show(await check(data, $("logkey").value, $("witnesses").value, $("quorum").value));
  } catch (exc) {
    if (!(exc instanceof BadInput)) console.error(exc);
    setVerdict("error", "", `Nothing was checked: ${exc.message}.`);
  }
  $("engine").textContent = engine ? engine.words : "not chosen yet";
}

function dropTarget(zone, into) {
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", async (e) => {
    e.preventDefault();
    e.stopPropagation();
    zone.classList.remove("over");
    for (const file of e.dataTransfer.files) await takeFile(file, into);
  });
}

function start() {
  $("check").addEventListener("click", onCheck);
  $("subject").addEventListener("input", () => {
    subjectFile = null;
    $("subject-name").textContent = "";
  });
  $("subject-file").addEventListener("change", async (e) => {
    for (const file of e.target.files) await takeFile(file, "subject");
  });
  $("logkey-file").addEventListener("change", async (e) => {
    for (const file of e.target.files) await takeFile(file, "log");
  });
  $("witness-files").addEventListener("change", async (e) => {
    for (const file of e.target.files) await takeFile(file, "witness");
  });
  // Files dropped on the page go where their contents say; on a field, into that field.
  dropTarget(document.body, null);
  dropTarget($("subject-zone"), "subject");
  dropTarget($("logkey-zone"), "log");
  dropTarget($("witness-zone"), "witness");
  chooseEngine().then(
    (chosen) => {
      engine = chosen;
      $("engine").textContent = chosen.words;
      document.body.dataset.engine = chosen.name;
    },
    (exc) => setVerdict("error", "", `Nothing can be checked: ${exc.message}.`),
  );
}

start();
