/**
 * Which client capabilities a modern request needs, and whether the request declared them. A server MUST
 * NOT rely on a capability the request did not declare, and answers -32021 listing what is missing
 * (basic/index.mdx "Per-request protocol fields"). Declarations are per request: nothing is inferred from
 * earlier requests.
 */
import { isObject, type JsonObject } from '../messages.js';
import { MissingCapabilityError, ok, refused, type Checked } from './errors.js';
import type { ClientCapabilities } from './meta.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

const TASKS_REQUIRED: ClientCapabilities = { extensions: { [TASKS_EXTENSION]: {} } };
const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);
/** What most requests need: nothing, as one object, so that checking it can be skipped. */
export const NOTHING_REQUIRED: ClientCapabilities = Object.freeze({});

/**
 * What a client request needs declared before it can be served at all: the tasks extension for tasks/* and
 * for a `subscriptions/listen` that asks for task notifications (ext-tasks specification/draft/tasks.md
 * "Error Handling: Protocol Errors", "Task Status Notifications").
 */
export function requiredForRequest(method: string, params: JsonObject | undefined): ClientCapabilities {
  if (TASK_METHODS.has(method)) return TASKS_REQUIRED;
  if (method === 'subscriptions/listen') {
    const notifications = params?.notifications;
    if (isObject(notifications) && notifications.taskIds !== undefined) return TASKS_REQUIRED;
  }
  return NOTHING_REQUIRED;
}

/**
 * What the client must have declared for a server-to-client request to be put to it as an input request
 * (basic/patterns/mrtr.mdx "Server Requirements" 7; client/elicitation.mdx, client/sampling.mdx,
 * client/roots.mdx "Capabilities"). Undefined: the method cannot be an input request at all.
 */
export function requiredForInputRequest(request: {
  method: string;
  params?: JsonObject | undefined;
}): ClientCapabilities | undefined {
  const params = request.params ?? {};
  switch (request.method) {
    case 'elicitation/create':
      return { elicitation: params.mode === 'url' ? { url: {} } : { form: {} } };
    case 'sampling/createMessage': {
      const sampling: JsonObject = {};
      if (params.tools !== undefined || params.toolChoice !== undefined) sampling.tools = {};
      if (params.includeContext === 'thisServer' || params.includeContext === 'allServers') {
        sampling.context = {};
      }
      return { sampling };
    }
    case 'roots/list':
      return { roots: {} };
    default:
      return undefined;
  }
}

/** ok when `declared` covers `required`; otherwise -32021 whose data names only the missing part. */
export function checkCapabilities(
  required: ClientCapabilities,
  declared: ClientCapabilities,
): Checked<ClientCapabilities> {
  const missing = missingPart(required, withImplicitForm(declared));
  return missing === undefined ? ok(declared) : refused(new MissingCapabilityError(missing));
}

/** `elicitation: {}` declares form mode (client/elicitation.mdx "Capabilities", backwards compatibility). */
function withImplicitForm(declared: ClientCapabilities): JsonObject {
  const { elicitation } = declared;
  if (!isObject(elicitation) || 'form' in elicitation || 'url' in elicitation) return declared;
  return { ...declared, elicitation: { form: {} } };
}

function missingPart(required: JsonObject, declared: JsonObject): JsonObject | undefined {
  const missing: JsonObject = {};
  for (const [key, need] of Object.entries(required)) {
    const have = declared[key];
    if (!isObject(have)) {
      missing[key] = need;
    } else if (isObject(need)) {
      const deeper = missingPart(need, have);
      if (deeper !== undefined) missing[key] = deeper;
    }
  }
  return Object.keys(missing).length === 0 ? undefined : missing;
}

/** The features of each capability an input request can need (requiredForInputRequest above). */
const INPUT_FEATURES: readonly (readonly [string, readonly string[]])[] = [
  ['elicitation', ['form', 'url']],
  ['sampling', ['tools', 'context']],
  ['roots', []],
];

/**
 * What a request declared that an input request can need, and nothing else: what a call waiting for input
 * or a task keeps of its request's capabilities (their `experimental` or extensions may be as large as a
 * message). `checkCapabilities(requiredForInputRequest(r), inputCapabilitiesOf(c))` agrees with it on `c`.
 */
export function inputCapabilitiesOf(declared: ClientCapabilities): ClientCapabilities {
  const withForm = withImplicitForm(declared);
  const kept: ClientCapabilities = {};
  for (const [capability, features] of INPUT_FEATURES) {
    const have = withForm[capability];
    if (!isObject(have)) continue;
    const present: JsonObject = {};
    for (const feature of features) if (isObject(have[feature])) present[feature] = {};
    kept[capability] = present;
  }
  return kept;
}
