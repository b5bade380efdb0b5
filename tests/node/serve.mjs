// One long-lived node for the tests (tests/support/noderig.py's NodeServer): the packages
// load once, not once per script run.
//   node serve.mjs FD
// Reads JSON lines {id, script, args} on stdin; imports SCRIPT (a file in the rig's directory)
// and awaits its exported main(args); writes {id, ok: result} or {id, error: stack} as one JSON
// line on file descriptor FD (not stdout: what the scripts print cannot garble an answer).
// Ends at the end of its input.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { writeSync } from "node:fs";

const fd = Number(process.argv[2]);
const answer = (obj) => {
  const buf = Buffer.from(JSON.stringify(obj) + "\n");
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
};
for await (const line of createInterface({ input: process.stdin })) {
  const { id, script, args } = JSON.parse(line);
  try {
    const mod = await import(pathToFileURL(script).href);
    answer({ id, ok: (await mod.main(args)) ?? null });
  } catch (e) {
    answer({ id, error: String(e?.stack ?? e) });
  }
}
