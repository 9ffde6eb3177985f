/**
 * Generated from crds/*.yaml by scripts/generate-crd-types.mjs (`npm run generate`): do not edit.
 * components['schemas'] holds <Kind>Spec and <Kind>Status for each CRD.
 */

export type paths = Record<string, never>;
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description The network as the platform should run it. */
        AgentNetworkSpec: {
            /** @description Names of Agent resources in this namespace, in order. The network is Ready only when every member is; otherwise its Ready reason is MemberNotFound or MemberNotReady, naming the member. */
            members: string[];
            /** @description Who acts next on a network run. */
            router: {
                /**
                 * @description sequential: the members in order, each given the previous one's output. handoff: the first member starts and a member passes control with the handoff tool; the run ends when one answers without handing off. supervisor: a router agent picks the next member or finishes, each time with a reason.
                 * @enum {string}
                 */
                type: "sequential" | "handoff" | "supervisor";
                /** @description (supervisor) The name of the Agent in this namespace that routes. */
                agent?: string;
                /** @description (supervisor) Instructions for a router the platform makes itself, instead of a router agent. */
                instructions?: string;
                /** @description (supervisor with instructions) The router's model; default auto. */
                model?: string;
            };
            /**
             * @description How many member runs one network run may start.
             * @default 10
             */
            maxHops?: number;
            /** @description A hard cap on each network run's cost, its hops included, decimal USD as a quoted string ("2.00"). A model call whose worst case would not fit is not made and the run fails with cost_limit_reached. Unset, none. */
            maxCostUsd?: string;
            /** @description Keep memories of the subjects runs are for (runs on a thread with a subject_id), each citing the message it was stated in, and give its hops the current memories of the subject. Unset, off. */
            memory?: {
                /** @description Whether memory is on. */
                enabled: boolean;
            };
            /**
             * @description What a new network run does while another is queued or in progress (as for an Agent).
             * @default allow
             * @enum {string}
             */
            concurrency?: "allow" | "reject" | "enqueue" | "interrupt";
            /** @description What the network is for. */
            description?: string;
            /** @description Up to 16 string pairs stored with the platform's network (keys up to 64 characters, values up to 512). */
            metadata?: {
                [key: string]: string;
            };
            /** @description Workers of this network's own: a Deployment the controller runs beside the platform's workers (in the platform's namespace, with the platform's worker image), whose workers take only this network's runs. Unset: the platform's shared workers run it. */
            workerPool?: {
                /**
                 * @description How many worker pods.
                 * @default 1
                 */
                replicas?: number;
                /** @description Not accepted (kept so that a resource that still sets it is refused, saying why): pool workers run the platform's worker image. */
                image?: string;
                /** @description CPU and memory requests and limits of each worker container. */
                resources?: {
                    /** @description The least each worker is given, e.g. cpu 250m, memory 256Mi. */
                    requests?: {
                        [key: string]: number | string;
                    };
                    /** @description The most each worker may use. */
                    limits?: {
                        [key: string]: number | string;
                    };
                };
            };
            /** @description Runs on a schedule: each entry is a platform schedule (GET /v1/schedules) the controller creates, keeps equal to it, and deletes when the entry is removed. See docs/schedules.md. */
            schedules?: {
                /** @description The entry's name, unique in the list (a DNS label). */
                name: string;
                /** @description Five fields (minute, hour, day of month, month, day of week), e.g. "0 9 * * 1-5". An expression the platform refuses leaves the resource not Ready with reason ApiRejected. */
                cron?: string;
                /** @description The IANA time zone the cron times are in (Europe/Paris); UTC when unset. */
                timezone?: string;
                /** @description Instead of cron, every this many seconds, counted from the Unix epoch. */
                intervalSeconds?: number;
                /** @description The run each time makes. */
                run: {
                    /** @description The user's message. */
                    input: string;
                    /** @description Up to 16 string pairs set on each run. */
                    metadata?: {
                        [key: string]: string;
                    };
                    /** @description The model for these runs, in place of the agent's. */
                    model?: string;
                    /** @description Each run's cost cap, decimal USD as a quoted string. */
                    maxCostUsd?: string;
                };
                /**
                 * @description What a time does while the previous scheduled run is still going: skip it, queue one, or run at once.
                 * @default skip
                 * @enum {string}
                 */
                overlap?: "skip" | "queue_one" | "allow";
                /**
                 * @description After an outage, the missed times within this many seconds are still run.
                 * @default 60
                 */
                catchupWindowSeconds?: number;
                /**
                 * @description A paused schedule makes no runs.
                 * @default false
                 */
                paused?: boolean;
            }[];
        };
        /** @description What the controller last saw and did. */
        AgentNetworkStatus: {
            /** @description The platform's id of this network (net_...), for the API (POST /v1/networks/{id}/run). */
            id?: string;
            /**
             * Format: int64
             * @description The metadata.generation the conditions describe.
             */
            observedGeneration?: number;
            /** @description The platform's schedule for each entry of spec.schedules, once written. */
            schedules?: {
                /** @description The entry's name. */
                name: string;
                /** @description The platform's schedule (sched_...). */
                id: string;
                /**
                 * Format: date-time
                 * @description When it next runs; unset while paused.
                 */
                nextRunTime?: string;
            }[];
            /** @description Accepted (the spec is valid: reason Valid or InvalidSpec) and Ready (the platform's network matches the spec and every member is Ready: reason Reconciled, or why not: Reconciling, MemberNotFound, MemberNotReady, ApiUnavailable, ApiRejected, Deleting). */
            conditions?: {
                /** @description Accepted or Ready. */
                type: string;
                /**
                 * @description True, False or Unknown.
                 * @enum {string}
                 */
                status: "True" | "False" | "Unknown";
                /**
                 * Format: int64
                 * @description The metadata.generation this condition was set for.
                 */
                observedGeneration?: number;
                /**
                 * Format: date-time
                 * @description When the status last changed.
                 */
                lastTransitionTime: string;
                /** @description A CamelCase word saying why. */
                reason: string;
                /** @description What a person should know, e.g. the API's error message. */
                message: string;
            }[];
        };
        /** @description The agent as the platform should run it. */
        AgentSpec: {
            /** @description The model: `auto` (the platform's routing picks a model for each call) or a model id the platform lists at GET /v1/models, e.g. gpt-4.1-mini or claude-sonnet-4-5. An unknown model leaves the agent not Ready with reason ApiRejected. */
            model: string;
            /**
             * @description The system instructions the model receives at the start of every run.
             * @default
             */
            instructions?: string;
            /** @description What the agent is for, shown to people and to a supervisor router choosing among members. */
            description?: string;
            /**
             * @description Tools the model may call: HTTP endpoints (type http), the tools of a remote MCP server (type mcp) or a remote A2A agent (type a2a); or the approval and policy of a built-in tool, read_file or search_context (type builtin). HTTP and A2A tool names, MCP server labels and built-in names are unique within the agent.
             * @default []
             */
            tools?: {
                /**
                 * @description http (one HTTP endpoint), mcp (every tool of a remote MCP server, offered as <serverLabel>__<tool>), a2a (a remote A2A agent), or builtin (the guards of read_file or search_context).
                 * @enum {string}
                 */
                type: "http" | "mcp" | "a2a" | "builtin";
                /** @description (http, a2a) The tool's name as the model sees it; not read_file or search_context, the built-in tools. (builtin) Which built-in tool. */
                name?: string;
                /** @description What the tool does, as the model reads it. (a2a) The card's name and description when unset. */
                description?: string;
                /** @description (http) The endpoint, an http or https URL without user name or password. */
                url?: string;
                /**
                 * @description (http) GET sends the arguments as the query string, the others as a JSON body. Default POST.
                 * @enum {string}
                 */
                method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
                /** @description (http) A JSON Schema (2020-12) of the arguments, an object schema ({"type":"object",...}). */
                parameters?: {
                    [key: string]: unknown;
                };
                /** @description How long one call may take, in milliseconds (http default 10000, mcp default 30000, both at most 60000; a2a default 60000, at most 110000). */
                timeoutMs?: number;
                /** @description (http) The largest answer the model is shown; longer ones are cut. Default 65536. */
                maxResponseBytes?: number;
                /** @description (mcp) 1 to 32 letters, digits, - and _, without __ and not ending in _. */
                serverLabel?: string;
                /** @description (mcp) The MCP server's Streamable HTTP endpoint. */
                serverUrl?: string;
                /** @description (a2a) The remote agent's card, e.g. https://agent.example/.well-known/agent-card.json. */
                cardUrl?: string;
                /** @description (mcp) Only these of the server's tools are offered; all of them when unset. */
                allowedTools?: string[];
                /** @description Whether a call waits for a person to approve, reject or edit it (POST /v1/approvals/{id}) before it runs: never (default), always, or when the model's arguments match the JSON Schema in arguments. */
                approval?: {
                    /**
                     * @description never (the default), always, or when the arguments match arguments.
                     * @enum {string}
                     */
                    mode: "never" | "always" | "when";
                    /** @description (mode when) A JSON Schema (2020-12) the arguments are matched against. */
                    arguments?: {
                        [key: string]: unknown;
                    };
                };
                /** @description A call whose arguments match denyWhen is refused without running or asking anyone. */
                policy?: {
                    /** @description A JSON Schema (2020-12) the arguments are matched against. */
                    denyWhen: {
                        [key: string]: unknown;
                    };
                };
            }[];
            /** @description Sampling settings sent with every model call; the model's own defaults when unset. */
            modelSettings?: {
                /** @description Sampling temperature, 0 to 2. */
                temperature?: number;
                /** @description Nucleus sampling, 0 to 1. */
                topP?: number;
                /** @description The most tokens one model call may produce. */
                maxOutputTokens?: number;
            };
            /**
             * @description What a new run does while another run of the agent is queued or in progress: allow runs it alongside; reject answers 409 agent_busy; enqueue runs it when the earlier ones have ended, in order; interrupt cancels the runs in progress and starts it.
             * @default allow
             * @enum {string}
             */
            concurrency?: "allow" | "reject" | "enqueue" | "interrupt";
            /**
             * @description Model and tool calls one run may make.
             * @default 10
             */
            maxSteps?: number;
            /**
             * @description How long a tool call waits for a decision before it expires, counting as a rejection (7 days by default).
             * @default 604800
             */
            approvalTimeoutSeconds?: number;
            /** @description A hard cap on each run's cost, decimal USD as a quoted string ("0.50"). Before each model call its worst case is reserved against it; a call that would not fit is not made and the run fails with cost_limit_reached. Unset, none. */
            maxCostUsd?: string;
            /** @description Keep memories of the subjects runs are for (runs on a thread with a subject_id), each citing the message it was stated in, and give runs for a subject its current memories. Unset, off. */
            memory?: {
                /** @description Whether memory is on. */
                enabled: boolean;
            };
            /** @description Up to 16 string pairs stored with the platform's agent (keys up to 64 characters, values up to 512). */
            metadata?: {
                [key: string]: string;
            };
            /** @description Runs on a schedule: each entry is a platform schedule (GET /v1/schedules) the controller creates, keeps equal to it, and deletes when the entry is removed. See docs/schedules.md. */
            schedules?: {
                /** @description The entry's name, unique in the list (a DNS label). */
                name: string;
                /** @description Five fields (minute, hour, day of month, month, day of week), e.g. "0 9 * * 1-5". An expression the platform refuses leaves the resource not Ready with reason ApiRejected. */
                cron?: string;
                /** @description The IANA time zone the cron times are in (Europe/Paris); UTC when unset. */
                timezone?: string;
                /** @description Instead of cron, every this many seconds, counted from the Unix epoch. */
                intervalSeconds?: number;
                /** @description The run each time makes. */
                run: {
                    /** @description The user's message. */
                    input: string;
                    /** @description Up to 16 string pairs set on each run. */
                    metadata?: {
                        [key: string]: string;
                    };
                    /** @description The model for these runs, in place of the agent's. */
                    model?: string;
                    /** @description Each run's cost cap, decimal USD as a quoted string. */
                    maxCostUsd?: string;
                };
                /**
                 * @description What a time does while the previous scheduled run is still going: skip it, queue one, or run at once.
                 * @default skip
                 * @enum {string}
                 */
                overlap?: "skip" | "queue_one" | "allow";
                /**
                 * @description After an outage, the missed times within this many seconds are still run.
                 * @default 60
                 */
                catchupWindowSeconds?: number;
                /**
                 * @description A paused schedule makes no runs.
                 * @default false
                 */
                paused?: boolean;
            }[];
        };
        /** @description What the controller last saw and did. */
        AgentStatus: {
            /** @description The platform's id of this agent (agent_...), for the API (POST /v1/agents/{id}/run). */
            id?: string;
            /**
             * Format: int64
             * @description The metadata.generation the conditions describe.
             */
            observedGeneration?: number;
            /** @description The platform's schedule for each entry of spec.schedules, once written. */
            schedules?: {
                /** @description The entry's name. */
                name: string;
                /** @description The platform's schedule (sched_...). */
                id: string;
                /**
                 * Format: date-time
                 * @description When it next runs; unset while paused.
                 */
                nextRunTime?: string;
            }[];
            /** @description Accepted (the spec is valid: reason Valid or InvalidSpec) and Ready (the platform's agent matches the spec: reason Reconciled, or why not: Reconciling, ApiUnavailable, ApiRejected, Deleting). */
            conditions?: {
                /** @description Accepted or Ready. */
                type: string;
                /**
                 * @description True, False or Unknown.
                 * @enum {string}
                 */
                status: "True" | "False" | "Unknown";
                /**
                 * Format: int64
                 * @description The metadata.generation this condition was set for.
                 */
                observedGeneration?: number;
                /**
                 * Format: date-time
                 * @description When the status last changed.
                 */
                lastTransitionTime: string;
                /** @description A CamelCase word saying why. */
                reason: string;
                /** @description What a person should know, e.g. the API's error message. */
                message: string;
            }[];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
