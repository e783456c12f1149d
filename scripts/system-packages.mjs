// `npm test`'s first step: the Debian packages some tests drive as real servers (Prometheus and
// promtool for the dashboard and alert rules, Chromium for the share window and browser CORS,
// redis-server for the shared cluster state).
// Missing ones are installed with apt-get when run as root; otherwise the tests stop at once with
// the one command that installs them.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";

/** Debian package → the files the tests run from it; a `*` stands for one folder's name (a version). */
const PACKAGES = {
  prometheus: ["/usr/bin/prometheus", "/usr/bin/promtool"],
  chromium: ["/usr/bin/chromium"],
  postgresql: ["/usr/lib/postgresql/*/bin/initdb", "/usr/lib/postgresql/*/bin/postgres"],
  "redis-server": ["/usr/bin/redis-server"],
  nginx: ["/usr/sbin/nginx"], // in front of two instances (test/nginx.test.ts)
  "python3-yaml": ["/usr/lib/python3/dist-packages/yaml/__init__.py"], // reads deploy/compose.yaml
};

const installed = (file) => {
  const [dir, rest] = file.split("/*");
  if (rest === undefined) return existsSync(file);
  return existsSync(dir) && readdirSync(dir).some((name) => existsSync(`${dir}/${name}${rest}`));
};
const missing = Object.entries(PACKAGES)
  .filter(([, files]) => !files.every(installed))
  .map(([name]) => name);
if (missing.length === 0) process.exit(0);

const command = `apt-get install -y --no-install-recommends ${missing.join(" ")}`;
const isRoot = process.getuid?.() === 0;
if (!isRoot || !existsSync("/usr/bin/apt-get")) {
  console.error(`The tests need the Debian packages ${missing.join(", ")}. Install them with:\n\n  sudo ${command}\n`);
  process.exit(1);
}
console.error(`[tests] installing ${missing.join(", ")} with apt-get (needed by the tests)`);
const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
try {
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  execFileSync("apt-get", command.split(" ").slice(1).concat("-qq"), { stdio: ["ignore", "ignore", "inherit"], env });
} catch {
  console.error(`[tests] apt-get failed; install the packages with:\n\n  ${command}\n`);
  process.exit(1);
}
