/**
 * The Agent Card of an agent or a network: who it is, where it answers (one JSON-RPC endpoint speaking A2A
 * 1.0 and 0.3 alike, told apart by the A2A-Version header), what it can do, and how to authenticate.
 */
import { A2A_PROTOCOL_VERSION, AgentCard, type AgentSkill } from '@a2a-js/sdk';
import type { AgentRecord } from '../../records/agents.js';
import type { NetworkRecord } from '../../records/networks.js';
import { COST_EXTENSION_URI } from './task.js';
import { INPUT_MODES } from './message-input.js';

/** The earlier protocol version the same endpoint also speaks, with its method names (`message/send`, …). */
export const LEGACY_PROTOCOL_VERSION = '0.3';

export type CardSubject = { kind: 'agent'; agent: AgentRecord } | { kind: 'network'; network: NetworkRecord; members: AgentRecord[] };

const TEXT_MODES = ['text/plain'];

function skillOf(agent: AgentRecord): AgentSkill {
  return {
    id: agent.id,
    name: agent.name,
    description: agent.description ?? `Runs the agent ${agent.name}.`,
    tags: ['agent'],
    examples: [],
    inputModes: INPUT_MODES,
    outputModes: TEXT_MODES,
    securityRequirements: [],
  };
}

/** The card in the protocol's own types; `url` is the endpoint's absolute address. */
export function agentCardOf(subject: CardSubject, url: string): AgentCard {
  const record = subject.kind === 'agent' ? subject.agent : subject.network;
  // A network is asked as a whole; its members are what it can do, which the supervisor chooses among.
  const skills = subject.kind === 'agent' ? [skillOf(subject.agent)] : subject.members.map(skillOf);
  return {
    name: record.name,
    description: record.description ?? (subject.kind === 'agent' ? `The agent ${record.name}.` : `The agent network ${record.name}.`),
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: LEGACY_PROTOCOL_VERSION },
    ],
    provider: { organization: 'Agentplane', url: 'https://agentplane.io' },
    version: String(record.version),
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [{ uri: COST_EXTENSION_URI, description: 'Cost of the task in USD.', required: false, params: undefined }],
    },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            scheme: 'Bearer',
            bearerFormat: 'Agentplane API key',
            description: 'An Agentplane API key of the project, as `Authorization: Bearer ap_…`.',
          },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: TEXT_MODES,
    skills,
    signatures: [],
  };
}

/** The card as A2A 1.0 serialises it (ProtoJSON). */
export const cardJson = (card: AgentCard): unknown => AgentCard.toJSON(card);

/**
 * The card as an A2A 0.3 client reads it: one `url` with its transport, a card-wide protocol version, the
 * OpenAPI-style security scheme, and, as the reference SDKs do, the 1.0 interfaces beside them so that a
 * client of either version finds its own.
 */
export function legacyCardJson(card: AgentCard): Record<string, unknown> {
  const interfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === LEGACY_PROTOCOL_VERSION);
  const primary = interfaces[0]!;
  return {
    protocolVersion: LEGACY_PROTOCOL_VERSION,
    name: card.name,
    description: card.description,
    url: primary.url,
    preferredTransport: primary.protocolBinding,
    ...(interfaces.length > 1
      ? { additionalInterfaces: interfaces.slice(1).map((i) => ({ url: i.url, transport: i.protocolBinding })) }
      : {}),
    provider: card.provider,
    version: card.version,
    capabilities: {
      streaming: card.capabilities?.streaming,
      pushNotifications: card.capabilities?.pushNotifications,
      extensions: card.capabilities?.extensions.map(({ uri, description, required }) => ({ uri, description, required })),
    },
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'Agentplane API key', description: 'An Agentplane API key of the project.' },
    },
    security: [{ bearer: [] }],
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map(({ id, name, description, tags, inputModes, outputModes }) => ({
      id,
      name,
      description,
      tags,
      inputModes,
      outputModes,
    })),
    supportsAuthenticatedExtendedCard: false,
    supportedInterfaces: (AgentCard.toJSON(card) as { supportedInterfaces: unknown }).supportedInterfaces,
  };
}
