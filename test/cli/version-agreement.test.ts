/** The version agreement judged from two version strings (docs/cli.md "Versions"). */
import t from 'tap';
import { judgeAgreement } from '../../cli/version-agreement.ts';

const at = 'https://admin.example.org';

t.equal(judgeAgreement('0.1.0+abc1234', '0.1.0+abc1234', at).kind, 'same');
t.match(judgeAgreement('0.1.0+abc1234', '0.2.0+abc1234', at), {
  kind: 'other-line',
  message: /refused rather than sent to a deployment from another release line/,
});
t.match(judgeAgreement('1.4.2+abc1234', '0.4.2+abc1234', at), { kind: 'other-line' }, 'the major counts');
t.match(judgeAgreement('0.1.0+abc1234', '0.2.0+unstamped', at), { kind: 'other-line' }, 'a readable line that differs is refused even unstamped');
t.match(judgeAgreement('0.1.0+abc1234', '0.1.3+abc1234', at), { kind: 'other-build', message: /not the same build and problems may occur/ }, 'a patch apart');
t.match(judgeAgreement('0.1.0+abc1234', '0.1.0+def5678', at), { kind: 'other-build' }, 'another commit');
t.match(judgeAgreement('0.1.0+abc1234', '0.1.0-nightly.3+abc1234', at), { kind: 'other-build' }, 'a nightly');
t.match(judgeAgreement('0.1.0+abc1234', '0.1.0+unstamped', at), { kind: 'unchecked', message: /is unchecked: the deployment is an unstamped build/ });
t.match(judgeAgreement('0.1.0+unstamped', '0.1.0+abc1234', at), { kind: 'unchecked', message: /this client is an unstamped build/ });
t.match(judgeAgreement('0.1.0+abc1234', '0.1.0', at), { kind: 'unchecked' }, 'no build part');
t.match(judgeAgreement('0.1.0+abc1234', 'latest', at), { kind: 'unchecked', message: /version cannot be read/ });
