// index.d.ts names exactly what src/index.js exports; npm pack makes a
// package that installs offline and imports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as api from '../src/index.js';

test('index.d.ts declares every export, and nothing more', () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8');
  const declared = [...dts.matchAll(/^export (?:declare )?(?:class|const|function) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, Object.keys(api).sort());
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(api.version, pkg.version);
  assert.deepEqual(Object.keys(pkg.dependencies ?? {}), [], 'a runtime dependency');
});

test('npm pack makes a package an application installs and imports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ticketd-pack-'));
  try {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8' }));
    const files = packed[0].files.map((f) => f.path).sort();
    assert.deepEqual(files.filter((f) => !f.startsWith('src/')), ['index.d.ts', 'package.json']);
    assert.ok(files.includes('src/index.js'));
    // An application of its own, offline: the tarball has no dependency to fetch.
    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', type: 'module' }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', join(dir, packed[0].filename)], { cwd: app });
    const out = execFileSync(process.execPath, ['--input-type=module', '-e',
      "import { Client, version } from 'ticketd-client'; const c = new Client({ endpoints: ['http://127.0.0.1:1'] }); await c.close(); console.log(version);"],
    { cwd: app, encoding: 'utf8' });
    assert.equal(out.trim(), api.version);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
