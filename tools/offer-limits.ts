/**
 * How much a run may offer its model: the tools MCP servers list are stored with every run and sent with
 * every model call, so a server (or many) listing too much fails the run's start instead of filling the
 * worker's memory and the run's record.
 */
import type { ToolSpec } from '../models/messages.js';
import { MAX_PARAMETERS_BYTES, shapeProblem } from './argument-schemas.js';

/** Tools one MCP server may offer (after `allowed_tools`). */
export const MAX_TOOLS_PER_SERVER = 128;
/** Tools a run may offer in all: HTTP tools, every MCP server's, and the built-in ones. */
export const MAX_OFFERED_TOOLS = 128;
/** Bytes an MCP server's answers to one listing may take, every page included. */
export const MAX_LISTING_BYTES = 2 * 1024 * 1024;
/** Bytes of everything a run offers, as JSON. */
export const MAX_OFFERED_BYTES = 1024 * 1024;
/** Characters of one tool's description. */
export const MAX_DESCRIPTION_CHARS = 8_192;

/** The tools a run would offer are more than it may; the run fails with `tools_too_large`. */
export class ToolsTooLargeError extends Error {
  readonly code = 'tools_too_large';

  constructor(message: string) {
    super(message);
    this.name = 'ToolsTooLargeError';
  }
}

/** Throws ToolsTooLargeError when a listed tool's description or schema is past its limit. */
export function checkListedTool(server: string, spec: ToolSpec): void {
  if (spec.description.length > MAX_DESCRIPTION_CHARS) {
    throw new ToolsTooLargeError(
      `The MCP server ${server} lists ${spec.name} with a description of ${spec.description.length} characters; at most ${MAX_DESCRIPTION_CHARS} are allowed.`,
    );
  }
  const shape = shapeProblem(spec.parameters);
  if (shape) throw new ToolsTooLargeError(`The MCP server ${server} lists ${spec.name} with an input schema that ${shape}.`);
  const bytes = Buffer.byteLength(JSON.stringify(spec.parameters));
  if (bytes > MAX_PARAMETERS_BYTES) {
    throw new ToolsTooLargeError(
      `The MCP server ${server} lists ${spec.name} with an input schema of ${bytes} bytes; at most ${MAX_PARAMETERS_BYTES} are allowed.`,
    );
  }
}

/** Throws ToolsTooLargeError when a run's tools, all together, are more than a run may offer. */
export function checkOffered(specs: ToolSpec[]): void {
  if (specs.length > MAX_OFFERED_TOOLS) {
    throw new ToolsTooLargeError(`The agent's tools come to ${specs.length} tools; a run may offer at most ${MAX_OFFERED_TOOLS}.`);
  }
  const bytes = Buffer.byteLength(JSON.stringify(specs));
  if (bytes > MAX_OFFERED_BYTES) {
    throw new ToolsTooLargeError(
      `The agent's tools come to ${bytes} bytes of names, descriptions and schemas; a run may offer at most ${MAX_OFFERED_BYTES}.`,
    );
  }
}
