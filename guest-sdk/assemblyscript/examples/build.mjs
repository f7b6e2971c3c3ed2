// Builds every examples/*.ts into build/<name>.wasm (or into the directory
// given as the first argument; with --testdata, testdata/*.ts too). The examples import the
// SDK by relative path, so they use examples/asconfig.json (the package's
// own asconfig.json names the SDK by its node_modules path, as a tool
// project sees it).
import { execFileSync } from "node:child_process";
import { readdirSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const dirs = ["examples"];
if (args[0] === "--testdata") {
  dirs.push("testdata");
  args.shift();
}
const out = args[0] || join(root, "build");
mkdirSync(out, { recursive: true });
const asc = join(root, "node_modules", ".bin", "asc");
for (const dir of dirs) for (const f of readdirSync(join(root, dir)).filter((f) => f.endsWith(".ts")).sort()) {
  const name = f.slice(0, -3);
  execFileSync(asc, [join(dir, f), "--config", join("examples", "asconfig.json"), "-o", join(out, name + ".wasm")], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
  });
  console.log("built " + join(out, name + ".wasm"));
}
