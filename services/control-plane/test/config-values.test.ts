// Goal: "A value that does not parse ... stop[s] the process at start with
// FELIX_CONTROLPLANE_CONFIG_INVALID" (docs/control-plane.md, Configuration). A listen address
// whose port is missing (`127.0.0.1:$PORT` with PORT unset) or is not a decimal number must be
// refused, not read as port 0 (a random port no broker or felixctl is pointed at) or as hex or
// an exponent.
// Found in an operator trial: FELIX_CONTROLPLANE_BIND=127.0.0.1: started the control plane on a
// random port (`{"event":"listening","address":"http://127.0.0.1:38689"}`), and so did the
// bootstrap listener with FELIX_BOOTSTRAP_BIND_ADDR=127.0.0.1:; `127.0.0.1:0x4FFF` listened on
// 20479 and `127.0.0.1:2e4` on 20000.
// Method: loadConfig on env maps.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ConfigInvalidError } from '../src/errors.js';

const noFile = () => {
  throw new Error('no file');
};

describe('control plane listen addresses', () => {
  it('a_control_plane_refuses_a_listen_address_whose_port_is_missing_or_not_decimal', () => {
    for (const bad of ['127.0.0.1:', '127.0.0.1: ', '127.0.0.1:0x4FFF', '127.0.0.1:2e4']) {
      expect(() => loadConfig({ FELIX_CONTROLPLANE_BIND: bad }, noFile), bad).toThrow(
        ConfigInvalidError,
      );
      expect(
        () =>
          loadConfig(
            {
              FELIX_CONTROLPLANE_BIND: '127.0.0.1:20444',
              FELIX_BOOTSTRAP_ENABLED: 'true',
              FELIX_BOOTSTRAP_TOKEN: 'a'.repeat(40),
              FELIX_BOOTSTRAP_BIND_ADDR: bad,
            },
            noFile,
          ),
        `bootstrap ${bad}`,
      ).toThrow(ConfigInvalidError);
    }
    // What is meant still loads.
    expect(loadConfig({ FELIX_CONTROLPLANE_BIND: '127.0.0.1:20444' }, noFile).port).toBe(20444);
  });
});
