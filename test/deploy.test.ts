// deploy/ checked without Docker: compose.yaml read by a YAML parser and held to the files it names,
// the gateway's config through the gateway's own loader (`sluice check-config`) with the variables
// compose gives it, prometheus.yml through promtool, the Dockerfile's shape and its health check
// run against a real gateway. nginx.conf is run by test/nginx.test.ts.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses } from "./support/main-process.js";
import { SHIPPED_NGINX_CONF } from "./support/nginx.js";

const DEPLOY = join(REPO_ROOT, "deploy");
const read = (file: string) => readFileSync(join(DEPLOY, file), "utf8");

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  command?: string[];
}
interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
}

/** YAML as Python's safe loader reads it (merge keys included), as JSON. */
function readYaml(file: string): unknown {
  const script = "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)";
  return JSON.parse(execFileSync("python3", ["-c", script, join(DEPLOY, file)], { encoding: "utf8" }));
}

const compose = readYaml("compose.yaml") as Compose;
const instances = Object.keys(compose.services).filter((name) => /^sluice-\d+$/.test(name));
const config = JSON.parse(read("sluice.config.json")) as { server: { port: number; bodyLimitBytes?: number } };
const configRefs = [...read("sluice.config.json").matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]!);

/** `${NAME}`, `${NAME:-default}` and `${NAME:?message}` in a compose value; `$$` is a literal `$`. */
const composeRefs = (text: string) => [...text.replaceAll("$$", "").matchAll(/\$\{(\w+)(:?[-?][^}]*)?\}/g)];
/** The value compose passes for `value`, with the variables of `env` filled in. */
const interpolate = (value: string, env: Record<string, string>) =>
  value.replace(/\$\{(\w+)(?::?[-?]([^}]*))?\}/g, (_, name: string, fallback?: string) => env[name] ?? fallback ?? "");

const envExample = Object.fromEntries(
  read(".env.example")
    .split("\n")
    .filter((line) => /^\w+=/.test(line))
    .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
);
/** .env.example with its required secrets filled in, as an operator would. */
const filledEnv = Object.fromEntries(Object.entries(envExample).map(([k, v]) => [k, v || `secret-${k.toLowerCase().replaceAll("_", "")}`]));

describe("deploy/compose.yaml", () => {
  it("runs postgres, redis, two Sluice instances, nginx, Prometheus and Grafana", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["grafana", "nginx", "postgres", "prometheus", "redis", "sluice-1", "sluice-2"]);
    for (const name of instances) {
      const s = compose.services[name]!;
      expect(resolve(DEPLOY, s.build!.context)).toBe(resolve(REPO_ROOT));
      expect(resolve(DEPLOY, s.build!.context, s.build!.dockerfile)).toBe(join(DEPLOY, "Dockerfile"));
      expect(s.ports).toBeUndefined(); // reached through nginx only
    }
  });

  it("mounts only files that exist, the gateway's config where SLUICE_CONFIG points", () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const volume of s.volumes ?? []) {
        const [source, target] = volume.split(":") as [string, string];
        if (source.startsWith(".")) expect(existsSync(resolve(DEPLOY, source)), `${name}: ${source}`).toBe(true);
        else expect(compose.volumes, `${name}: named volume ${source}`).toHaveProperty(source);
        if (name.startsWith("sluice-") && source === "./sluice.config.json") expect(target).toBe(s.environment!.SLUICE_CONFIG);
      }
    }
    expect(compose.services.nginx!.volumes).toContain("./nginx.conf:/etc/nginx/nginx.conf:ro");
  });

  it("gives each instance every variable its config refers to", () => {
    expect(configRefs.length).toBeGreaterThan(0);
    for (const name of instances) expect(Object.keys(compose.services[name]!.environment!)).toEqual(expect.arrayContaining(configRefs));
  });

  it("names every variable it reads in .env.example, and requires each secret", () => {
    const text = read("compose.yaml");
    const used = new Set(composeRefs(text).map((m) => m[1]!));
    expect([...used].filter((name) => !(name in envExample))).toEqual([]);
    for (const secret of ["POSTGRES_PASSWORD", "REDIS_PASSWORD", "SLUICE_ADMIN_KEY", "GRAFANA_ADMIN_PASSWORD"]) {
      expect(composeRefs(text).filter((m) => m[1] === secret).every((m) => m[2]?.startsWith(":?"))).toBe(true);
    }
  });

  it("keeps Redis's shared counters on disk (AOF) and never evicts them", () => {
    const command = compose.services.redis!.command!.join(" ");
    expect(command).toContain("--appendonly yes");
    expect(command).toContain("--maxmemory-policy noeviction");
  });

  it("provisions Grafana with the Sluice dashboard and a datasource on the prometheus service", () => {
    const volumes = compose.services.grafana!.volumes!;
    expect(volumes).toContain("../grafana/dashboards:/var/lib/grafana/dashboards/sluice:ro");
    const provider = readFileSync(join(REPO_ROOT, "grafana/provisioning/dashboards/sluice.yml"), "utf8");
    expect(provider).toContain("path: /var/lib/grafana/dashboards/sluice");
    const datasource = readYaml("grafana/datasource.yml") as { datasources: Array<{ uid: string; url: string; type: string }> };
    expect(datasource.datasources).toEqual([expect.objectContaining({ type: "prometheus", uid: "sluice-prometheus", url: "http://prometheus:9090" })]);
    expect(volumes.some((v) => v.startsWith("./grafana/datasource.yml:/etc/grafana/provisioning/datasources/"))).toBe(true);
  });
});

describe("deploy/sluice.config.json", () => {
  const checkConfig = (env: Record<string, string>) =>
    spawnSync(process.execPath, [join(REPO_ROOT, "bin/sluice.js"), "check-config", join(DEPLOY, "sluice.config.json")], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, ...env },
    });

  it("passes the gateway's own loader with the environment compose gives an instance", () => {
    const given = compose.services["sluice-1"]!.environment!;
    const env = Object.fromEntries(Object.entries(given).map(([k, v]) => [k, interpolate(v, filledEnv)]));
    const result = checkConfig(env);
    expect(result.stderr + result.stdout).not.toContain("invalid");
    expect(result.status).toBe(0);
  });

  it("names each missing variable when the environment lacks it", () => {
    const result = checkConfig({});
    expect(result.status).toBe(1);
    for (const name of configRefs) expect(result.stderr + result.stdout).toContain(`environment variable ${name} is not set`);
  });
});

describe("deploy/prometheus.yml", () => {
  it("is valid for promtool, with the alert rules where compose mounts them, and scrapes every instance on its own", () => {
    // the folder the prometheus container sees: this file, and the mounts beside it
    const etc = mkdtempSync(join(tmpdir(), "sluice-prometheus-"));
    try {
      for (const volume of compose.services.prometheus!.volumes!) {
        const [source, target] = volume.split(":") as [string, string];
        if (source.startsWith(".") && dirname(target) === "/etc/prometheus") copyFileSync(resolve(DEPLOY, source), join(etc, basename(target)));
      }
      execFileSync("promtool", ["check", "config", join(etc, "prometheus.yml")], { stdio: "pipe" });
    } finally {
      rmSync(etc, { recursive: true, force: true });
    }
    const prometheus = readYaml("prometheus.yml") as { scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }> };
    const targets = prometheus.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    expect(targets.sort()).toEqual(instances.map((name) => `${name}:${config.server.port}`).sort());
  });
});

describe("deploy/nginx.conf", () => {
  it("sends to every instance, and refuses bodies above the gateway's limit with the gateway's message", () => {
    const conf = readFileSync(SHIPPED_NGINX_CONF, "utf8");
    for (const name of instances) expect(conf).toMatch(new RegExp(`^\\s*server ${name}:${config.server.port}\\b`, "m"));
    const limit = config.server.bodyLimitBytes ?? 2 * 1024 * 1024;
    const [, size, unit] = /client_max_body_size (\d+)([km]?);/.exec(conf)!;
    expect(Number(size) * ({ k: 1024, m: 1024 * 1024 }[unit as "k" | "m"] ?? 1)).toBe(limit);
    expect(conf).toContain(`Request body is larger than ${limit} bytes.`);
  });
});

describe("deploy/Dockerfile", () => {
  const dockerfile = read("Dockerfile");
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages.at(-1)!;

  it("builds in one stage (compilers, npm ci, the build script) and runs from another without them", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0]).toMatch(/apt-get install[^\n]*python3 make g\+\+/);
    expect(stages[0]).toContain("npm ci");
    expect(stages[0]).toContain("node scripts/build.mjs");
    expect(stages[0]).toContain("--omit=dev");
    expect(runtime).not.toMatch(/apt-get|npm ci|g\+\+/);
  });

  it("runs node dist/main.js as PID 1 as a user that is not root", () => {
    const user = [...runtime.matchAll(/^USER (\S+)/gm)].at(-1)?.[1];
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)$/);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(runtime)![1]!) as string[];
    expect(cmd[0]).toBe("node");
    expect(cmd.at(-1)).toBe("dist/main.js");
    expect(runtime).not.toMatch(/^ENTRYPOINT/m);
  });

  it("copies only sources that are in the repository and let through by its .dockerignore", () => {
    const ignore = read("Dockerfile.dockerignore").split("\n").filter((l) => l && !l.startsWith("#"));
    expect(ignore[0]).toBe("*");
    const allowed = ignore.slice(1).map((l) => l.replace(/^!/, "").replace(/\/$/, ""));
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(" "));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(existsSync(join(REPO_ROOT, source)), source).toBe(true);
      expect(allowed, source).toContain(source.replace(/\/$/, ""));
    }
  });

  describe("its HEALTHCHECK", () => {
    const processes = createMainProcesses();
    const dir = mkdtempSync(join(tmpdir(), "sluice-deploy-"));
    afterAll(async () => {
      await processes.killAll();
      rmSync(dir, { recursive: true, force: true });
    });
    const check = JSON.parse(/^\s*CMD (\[.*\])$/m.exec(dockerfile.slice(dockerfile.indexOf("HEALTHCHECK")))![1]!) as string[];
    const probe = (port: number) => spawnSync(process.execPath, check.slice(1), { env: { PORT: String(port) } }).status;

    it("probes /healthz: 0 while the gateway answers, 1 when nothing listens", async () => {
      expect(check[0]).toBe("node");
      expect(check.join(" ")).toContain("/healthz");
      const path = join(dir, "config.json");
      writeFileSync(path, JSON.stringify({ store: { driver: "memory" }, channels: [{ name: "d", type: "echo", models: ["m"] }], llmModels: [{ model: "m" }] }));
      const gateway = await processes.startMain(BUILT_ENTRY, ["--config", path]);
      const port = Number(new URL(gateway.url).port);
      expect(probe(port)).toBe(0);
      gateway.proc.kill("SIGTERM");
      await gateway.exited;
      expect(probe(port)).toBe(1);
    });
  });
});
