/** What a webhook URL may be: checked at registration; a name's addresses are checked at each delivery. */
import { InvalidRequestError } from '../../errors.js';
import { literalHostProblem, parsedUrl } from '../../../tools/network-guard.js';

export function checkEndpointUrl(text: string, allowPrivate: boolean): void {
  const url = parsedUrl(text);
  if (typeof url === 'string') throw InvalidRequestError('invalid_url', `${url}.`, 'url');
  if (url.username || url.password) throw InvalidRequestError('invalid_url', 'A webhook URL carries no user name or password.', 'url');
  const problem = allowPrivate ? null : literalHostProblem(url);
  if (problem) {
    throw InvalidRequestError(
      'invalid_url',
      `${problem}; webhooks may only be sent to public addresses (AGENTPLANE_WEBHOOK_ALLOW_PRIVATE).`,
      'url',
    );
  }
}
