/**
 * The one mapping from anything thrown while serving a request to the JSON-RPC error sent for it:
 * ProtocolErrors as they are, the 2026-07-28 refusals, and what a task store refuses. It sits here, above
 * src/protocol (which knows nothing of tasks) and the stores (which know nothing of the wire). Internal
 * failures (a bug, a closed pipe) become -32603 with a generic message.
 */
import { ErrorCode, ProtocolError, type JsonRpcErrorObject } from '../protocol/errors.js';
import {
  HeaderMismatchError,
  InvalidMetaError,
  MissingCapabilityError,
  RequestStateError,
  UnsupportedVersionError,
} from '../protocol/modern/errors.js';
import {
  InvalidCursorError,
  TaskLimitError,
  TaskNotFoundError,
  TaskStoreUnavailableError,
} from './errors.js';
import { IllegalTransitionError } from './state.js';

export function toJsonRpcError(error: unknown): JsonRpcErrorObject {
  if (error instanceof ProtocolError) return error.toJson();
  if (error instanceof TaskNotFoundError) {
    return { code: ErrorCode.InvalidParams, message: `Task not found or expired: ${error.taskId}` };
  }
  if (error instanceof IllegalTransitionError && error.to === 'cancelled') {
    return {
      code: ErrorCode.InvalidParams,
      message: `Cannot cancel task: already in terminal status '${error.from}'`,
    };
  }
  if (error instanceof InvalidCursorError) {
    return {
      code: ErrorCode.InvalidParams,
      message: 'Invalid cursor: pass back a nextCursor exactly as received',
    };
  }
  if (error instanceof TaskLimitError) return { code: ErrorCode.LimitExceeded, message: error.limit };
  if (error instanceof TaskStoreUnavailableError) {
    // The store's own message names the server: that is for the logs, not for the client.
    return {
      code: ErrorCode.StoreUnavailable,
      message: 'Task store unavailable: retry later, or call the tool without a task',
    };
  }
  if (error instanceof InvalidMetaError || error instanceof RequestStateError) {
    return { code: ErrorCode.InvalidParams, message: error.message };
  }
  if (error instanceof UnsupportedVersionError) {
    return {
      code: ErrorCode.UnsupportedProtocolVersion,
      message: error.message,
      data: { supported: [...error.supported], requested: error.requested },
    };
  }
  if (error instanceof MissingCapabilityError) {
    return {
      code: ErrorCode.MissingRequiredClientCapability,
      message: error.message,
      data: { requiredCapabilities: error.required },
    };
  }
  if (error instanceof HeaderMismatchError) return { code: ErrorCode.HeaderMismatch, message: error.message };
  return { code: ErrorCode.InternalError, message: 'Internal error in taskgate' };
}
