#!/usr/bin/env node
// The compile step of `npm run test:fast`: every TypeScript source of tsconfig.json into dist/, one file at a
// time and without the type checker (which test:fast runs beside the tests), so a first run takes seconds
// where `tsc` takes most of a minute. A file whose output is newer than it is left alone. The output is what
// `tsc` emits: `isolatedModules` in tsconfig.json keeps every file compilable on its own.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const configPath = join(root, 'tsconfig.json');
const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile);
if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
const { options, fileNames } = ts.parseJsonConfigFileContent(config, ts.sys, root, undefined, configPath);
const outDir = options.outDir;
const rootDir = options.rootDir ?? root;

const mtimeOf = (path) => {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
};

let compiled = 0;
for (const source of fileNames) {
  if (source.endsWith('.d.ts')) continue;
  const output = join(outDir, relative(rootDir, source)).replace(/\.tsx?$/, '.js');
  if (mtimeOf(output) >= mtimeOf(source)) continue;
  const { outputText, sourceMapText } = ts.transpileModule(readFileSync(source, 'utf8'), {
    fileName: source,
    // The package is ESM ("type": "module"): under NodeNext, tsc emits every file here as an ES module, one
    // without imports or exports included.
    compilerOptions: {
      ...options,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      moduleDetection: ts.ModuleDetectionKind.Force,
    },
    reportDiagnostics: false,
  });
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, outputText);
  if (sourceMapText) {
    const map = JSON.parse(sourceMapText);
    map.file = basename(output);
    map.sources = [relative(dirname(output), source)];
    writeFileSync(`${output}.map`, JSON.stringify(map));
  }
  compiled++;
}
console.log(`transpiled ${compiled} of ${fileNames.length} files into ${relative(root, outDir)}/`);
