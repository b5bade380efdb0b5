// agentctl's child for LangGraph.js graphs: `node langgraph_child.mjs EVENTS_FD` (with
// `--import` of the project's tsx for a TypeScript graph). The same protocol as
// langgraph_child.py: one JSON request on stdin; one JSON line per event on EVENTS_FD
// (checkpoint / done / error / edited / created / setup / interrupted); exit 0, 1 (the run
// raised), 2 (setup: nothing ran), 130 (Ctrl-C).
//
// Standalone: node's builtins, and @langchain/langgraph and its savers resolved FROM THE
// USER'S PROJECT (request.project: where langgraph.json or the agent file is), so that the
// graph and this script share one copy of LangGraph.js; and the user's module. What the
// user's code prints goes to agentctl's stderr (stdout is that too).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

const EVENTS_FD = Number(process.argv[2]);
const HERE = fileURLToPath(import.meta.url);

class SetupError extends Error {}

function emit(event) {
  fs.writeSync(EVENTS_FD, JSON.stringify(event, (k, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");
}

function readStdin() {
  const chunks = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === "EAGAIN") continue;
      if (e.code === "EOF") break;
      throw e;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

// the ESM entry of `name` (+ `sub`path) as installed under the project: node_modules walked
// up from `project`, the package's "exports" read with the conditions import > node > default
function pickExport(entry) {
  if (typeof entry === "string") return entry;
  if (Array.isArray(entry)) {
    for (const e of entry) {
      const got = pickExport(e);
      if (got) return got;
    }
    return null;
  }
  if (entry && typeof entry === "object") {
    for (const cond of ["import", "node", "default"]) {
      if (cond in entry) {
        const got = pickExport(entry[cond]);
        if (got) return got;
      }
    }
  }
  return null;
}

function resolveFromProject(project, name, sub = ".") {
  let dir = project;
  for (;;) {
    const pkgDir = path.join(dir, "node_modules", ...name.split("/"));
    const manifest = path.join(pkgDir, "package.json");
    if (fs.existsSync(manifest)) {
      const pkg = JSON.parse(fs.readFileSync(manifest, "utf8"));
      let rel = null;
      if (pkg.exports) {
        const exp = typeof pkg.exports === "string" || Array.isArray(pkg.exports) || !Object.keys(pkg.exports).some((k) => k.startsWith("."))
          ? { ".": pkg.exports } : pkg.exports;
        rel = pickExport(exp[sub]);
      } else if (sub === ".") {
        rel = pkg.module || pkg.main || "index.js";
      }
      if (!rel) throw new SetupError(`${name} (${pkgDir}) exports no ${sub}`);
      return pathToFileURL(path.join(pkgDir, rel)).href;
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

async function importFromProject(project, name, what) {
  const url = resolveFromProject(project, name);
  if (!url) {
    throw new SetupError(`${project} has no ${name} installed (${what}); run \`npm install ${name}\` in the project`);
  }
  return import(url);
}

async function loadGraph(agent) {
  const file = agent.file;
  let mod;
  try {
    mod = await import(pathToFileURL(file).href);
  } catch (exc) {
    if (exc && exc.code === "ERR_UNKNOWN_FILE_EXTENSION") {
      throw new SetupError(`node cannot load ${file} (${exc.message}); install tsx in the project: npm install -D tsx`);
    }
    throw new SetupError(`loading ${file} raised ${exc?.name ?? "an error"}: ${exc?.message ?? exc}`);
  }
  if (!(agent.var in mod)) {
    const names = Object.keys(mod).sort().slice(0, 12);
    throw new SetupError(`${file} exports no ${JSON.stringify(agent.var)} (it exports: ${names.join(", ") || "nothing"})`);
  }
  let graph = mod[agent.var];
  if (typeof graph === "function" && typeof graph.compile !== "function" && typeof graph.invoke !== "function") {
    graph = await graph({ configurable: {} }); // a factory, as langgraph.json allows
  }
  if (graph && typeof graph.invoke !== "function" && typeof graph.compile === "function") {
    graph = graph.compile(); // a StateGraph not compiled yet
  }
  if (!graph || typeof graph.stream !== "function" || typeof graph.getState !== "function") {
    throw new SetupError(`${file}:${agent.var} is not a LangGraph.js graph (a StateGraph or its compile())`);
  }
  return graph;
}

// agentctl's DSN may carry `search_path=` (as asyncpg takes it): PostgresSaver's `schema`
function pgTarget(target) {
  const url = new URL(target);
  const schema = url.searchParams.get("search_path");
  url.searchParams.delete("search_path");
  return [url.toString(), schema ? { schema } : undefined];
}

async function openSaver(req) {
  if (req.kind === "sqlite") {
    const { SqliteSaver } = await importFromProject(req.project, "@langchain/langgraph-checkpoint-sqlite", "its SqliteSaver");
    return SqliteSaver.fromConnString(req.target);
  }
  const { PostgresSaver } = await importFromProject(req.project, "@langchain/langgraph-checkpoint-postgres", "its PostgresSaver");
  const [dsn, options] = pgTarget(req.target);
  return PostgresSaver.fromConnString(dsn, options);
}

async function closeSaver(saver) {
  try {
    if (typeof saver.end === "function") await saver.end();
    else if (saver.db && typeof saver.db.close === "function") saver.db.close();
  } catch {
    // closing is best effort
  }
}

// the frames of the user's code in an error's stack: not node's, not node_modules', not ours
const FRAME = /^\s*at (?:(.*?) \()?(.*?):(\d+):(\d+)\)?$/;
function userFrames(exc) {
  const out = [];
  for (const line of String(exc?.stack ?? "").split("\n").slice(1)) {
    const m = FRAME.exec(line);
    if (!m) continue;
    let file = m[2];
    if (file.startsWith("file://")) file = fileURLToPath(file);
    if (file.startsWith("node:") || !path.isAbsolute(file) || file.includes(`${path.sep}node_modules${path.sep}`) || file === HERE) continue;
    let code = "";
    try {
      code = fs.readFileSync(file, "utf8").split("\n")[Number(m[3]) - 1]?.trim() ?? "";
    } catch {
      // not readable: no code line
    }
    const name = (m[1] || "<module>").replace(/ \[as [^\]]*\]$/, "").replace(/^RunnableCallable\./, "");
    out.push({ file, line: Number(m[3]), name, code });
  }
  return out;
}

// the node that raised: LangGraph.js marks the error with its task's id (pregelTaskId),
// whose name the checkpoint before it listed among its tasks
function nodeOf(exc, taskNames) {
  return taskNames.get(exc?.pregelTaskId) ?? null;
}

function headConfig(config) {
  const { checkpoint_id, ...rest } = config.configurable;
  return { configurable: rest };
}

function doneEvent(state) {
  const interrupts = [];
  for (const t of state.tasks ?? []) for (const i of t.interrupts ?? []) interrupts.push(i?.value ?? null);
  return { event: "done", next: [...(state.next ?? [])], interrupts, head: state.config?.configurable?.checkpoint_id ?? null };
}

// a copy of `value` with `value2` at `keys` (UNSET: removed)
const UNSET = Symbol("unset");
function setIn(value, keys, value2, where) {
  if (keys.length === 0) return value2;
  const [key, ...rest] = keys;
  if (Array.isArray(value)) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < -value.length || i >= value.length) throw new SetupError(`${where}: no item ${JSON.stringify(key)} in a list of ${value.length}`);
    const items = [...value];
    const at = i < 0 ? i + items.length : i;
    if (rest.length) items[at] = setIn(items[at], rest, value2, where);
    else if (value2 === UNSET) items.splice(at, 1);
    else items[at] = value2;
    return items;
  }
  if (value && typeof value === "object") {
    if (rest.length && !(key in value)) throw new SetupError(`${where}: no key ${JSON.stringify(key)}`);
    const out = Object.assign(Object.create(Object.getPrototypeOf(value)), value);
    if (rest.length) out[key] = setIn(value[key], rest, value2, where);
    else if (value2 === UNSET) {
      if (!(key in out)) throw new SetupError(`${where}: no key ${JSON.stringify(key)} to unset`);
      delete out[key];
    } else out[key] = value2;
    return out;
  }
  throw new SetupError(`${where}: cannot change ${JSON.stringify(key)} inside a ${typeof value}`);
}

function updates(graph, values, edits, Overwrite) {
  const channels = graph.channels ?? {};
  const known = Object.keys(channels).filter((k) => !k.startsWith("__") && !k.startsWith("branch:")).sort();
  const out = {};
  for (const [keys, value, how] of edits) {
    const top = keys[0];
    if (!known.includes(top)) throw new SetupError(`the state has no key ${JSON.stringify(top)} (its keys: ${known.join(", ")})`);
    const value2 = how === "unset" ? UNSET : value;
    if (keys.length === 1) {
      if (value2 === UNSET) throw new SetupError(`${JSON.stringify(top)} is a channel of the graph: it can be set, not unset`);
      out[top] = value2;
      continue;
    }
    out[top] = setIn(top in out ? out[top] : values[top], keys.slice(1), value2, keys.join("."));
  }
  // a channel with a reducer gets the value itself (Overwrite), not an append
  for (const top of Object.keys(out)) if (typeof channels[top]?.operator === "function") out[top] = new Overwrite(out[top]);
  return out;
}

let controller = null;
let interrupted = false;
process.on("SIGINT", () => {
  interrupted = true;
  if (controller) controller.abort();
  else {
    emit({ event: "interrupted" });
    process.exit(130);
  }
});

async function main() {
  const req = readStdin();
  const lg = await importFromProject(req.project, "@langchain/langgraph", "LangGraph.js");
  if (req.mode === "create") {
    const saver = await openSaver(req);
    try {
      await saver.setup();
    } catch (exc) {
      throw new SetupError(`LangGraph.js's saver could not create its tables: ${exc?.name}: ${exc?.message}`);
    } finally {
      await closeSaver(saver);
    }
    emit({ event: "created" });
    return 0;
  }
  const graph = await loadGraph(req.agent);
  const saver = await openSaver(req);
  try {
    graph.checkpointer = saver;
    const configurable = { ...(req.configurable ?? {}), thread_id: req.thread, checkpoint_ns: "" };
    if (req.from) configurable.checkpoint_id = req.from;
    const config = { configurable };
    if (req.context !== undefined && req.context !== null) config.context = req.context;
    if (req.mode === "edit") {
      let next;
      try {
        const state = await graph.getState(config);
        next = await graph.updateState(config, updates(graph, state.values ?? {}, req.edits, lg.Overwrite), req.as_node ?? undefined);
      } catch (exc) {
        if (exc instanceof SetupError) throw exc;
        emit({ event: "setup", message: `LangGraph.js refused the update: ${exc?.name}: ${exc?.message}` });
        return 2;
      }
      const state = await graph.getState(next);
      emit({ event: "edited", id: next.configurable.checkpoint_id, step: state.metadata?.step ?? null, next: [...(state.next ?? [])] });
      return 0;
    }
    const value = "resume" in req ? new lg.Command({ resume: req.resume }) : (req.input ?? null);
    controller = new AbortController();
    let nodes = [];
    let keys = [];
    const taskNames = new Map();
    try {
      const stream = await graph.stream(value, { ...config, streamMode: ["updates", "checkpoints"], signal: controller.signal });
      for await (const [mode, chunk] of stream) {
        if (mode === "updates") {
          for (const [node, update] of Object.entries(chunk ?? {})) {
            if (node === "__interrupt__") continue;
            nodes.push(node);
            if (update && typeof update === "object" && !Array.isArray(update)) for (const k of Object.keys(update)) if (!keys.includes(k)) keys.push(k);
          }
          continue;
        }
        if (mode !== "checkpoints") continue;
        const conf = chunk.config?.configurable ?? {};
        const meta = chunk.metadata ?? {};
        for (const t of chunk.tasks ?? []) taskNames.set(t.id, t.name);
        emit({ event: "checkpoint", id: conf.checkpoint_id, ns: conf.checkpoint_ns ?? "", step: meta.step ?? null,
          source: meta.source ?? null, nodes, keys, next: [...(chunk.next ?? [])] });
        nodes = [];
        keys = [];
      }
    } catch (exc) {
      if (interrupted) {
        emit({ event: "interrupted" });
        return 130;
      }
      const frames = userFrames(exc);
      emit({ event: "error", type: exc?.name ?? typeof exc, message: String(exc?.message ?? exc), node: nodeOf(exc, taskNames),
        frames, origin: frames.length ? "agent" : "LangGraph.js" });
      return 1;
    }
    controller = null;
    if (interrupted) {
      emit({ event: "interrupted" });
      return 130;
    }
    emit(doneEvent(await graph.getState(headConfig(config))));
    return 0;
  } finally {
    await closeSaver(saver);
  }
}

main().then(
  (code) => process.exit(code),
  (exc) => {
    if (exc instanceof SetupError) emit({ event: "setup", message: exc.message });
    else emit({ event: "setup", message: `the LangGraph.js runner failed: ${exc?.name}: ${exc?.message}` });
    process.exit(2);
  },
);
