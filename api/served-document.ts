/**
 * The document as a deployment serves it at /v1/openapi.json: api/openapi.yaml, with the rules that this
 * deployment's settings decide stated for its clients. Whether private, loopback and link-local targets are
 * refused is the operator's choice (AGENTPLANE_TOOLS_ALLOW_PRIVATE, AGENTPLANE_WEBHOOK_ALLOW_PRIVATE): where
 * they are, the URL schemas rule out, by a `not`, the hosts refused by their text alone (`localhost` names and
 * IPv4 literals outside the public unicast space) and say in words what no pattern can (IPv6 literals, and
 * names, whose addresses are checked at each connection); where they are allowed, nothing claims otherwise.
 */
import ipaddr from 'ipaddr.js';
import { openapiDocument, type OpenApiDocument } from './openapi-document.js';

export interface TargetSettings {
  toolsAllowPrivate: boolean;
  webhooksAllowPrivate: boolean;
}

type UrlSchema = { description?: string; allOf?: unknown[]; not?: unknown };

export function servedDocument({ toolsAllowPrivate, webhooksAllowPrivate }: TargetSettings): OpenApiDocument {
  const document = structuredClone(openapiDocument);
  const schemas = document.components.schemas as Record<string, UrlSchema>;
  const tool = schemas.ToolUrl!;
  const webhook = schemas.WebhookUrl!;
  tool.description = `${tool.description} ${toolsAllowPrivate ? PRIVATE_ALLOWED : refused('invalid_tool')}`;
  webhook.description = `${webhook.description} ${webhooksAllowPrivate ? PRIVATE_ALLOWED : refused('invalid_url')}`;
  if (!toolsAllowPrivate) tool.not = { pattern: NON_PUBLIC_LITERAL_HOST };
  // A webhook URL has the grammar of a tool URL, and a policy of its own in place of the tools'.
  const { description: _description, not: _tools, ...grammar } = tool;
  webhook.allOf = [webhooksAllowPrivate ? grammar : { ...grammar, not: { pattern: NON_PUBLIC_LITERAL_HOST } }];
  return document;
}

const PRIVATE_ALLOWED = 'This deployment allows private, loopback and link-local targets.';
const refused = (code: string) =>
  `This deployment refuses private, loopback, link-local and other non-public targets with 400 \`${code}\`: a ` +
  '`localhost` name or an IPv4 literal outside public unicast space by this schema, a non-public IPv6 literal ' +
  'when the URL is saved, and a name whose addresses are not public when a request connects.';

/** A decimal octet from `low` to `high`, written as URLs write it (no leading zeros). */
function octets(low: number, high: number): string {
  if (low === 0 && high === 255) return '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
  return `(${Array.from({ length: high - low + 1 }, (_, i) => low + i).join('|')})`;
}

/** The dotted quads of one IPv4 range, as a pattern. */
function rangePattern(base: number[], prefix: number): string {
  return base
    .map((octet, i) => {
      const fixed = Math.min(8, Math.max(0, prefix - i * 8));
      const low = octet & (0xff << (8 - fixed)) & 0xff;
      return octets(low, low | (0xff >> fixed));
    })
    .join('\\.');
}

type Range = [ipaddr.IPv4, number];
// The IPv4 ranges isPublicAddress refuses (tools/network-guard.ts): every special range ipaddr.js knows, as
// range() reads them (its types do not declare the table).
const specialRanges = (ipaddr.IPv4.prototype as unknown as { SpecialRanges: Record<string, Range[] | Range> }).SpecialRanges;
const nonPublicIpv4 = Object.values(specialRanges)
  .flatMap((ranges) => (Array.isArray(ranges[0]) ? (ranges as Range[]) : [ranges as Range]))
  .map(([address, prefix]) => rangePattern(address.octets, prefix));

const localhostName = '(([A-Za-z0-9]+(-+[A-Za-z0-9]+)*\\.)*[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]\\.?)';

/** A URL whose host is refused by its text alone: a `localhost` name or a non-public IPv4 literal. */
export const NON_PUBLIC_LITERAL_HOST = `^https?://(${localhostName}|${nonPublicIpv4.map((p) => `(${p})`).join('|')})([:/?#]|$)`;
