// Before the first call: the microphone asked for ahead of time, so an incoming call can be answered at once,
// and a refusal explained while nobody is waiting on the line. Hidden once the browser has granted it.
import { useEffect, useState } from 'react';
import { microphonePermission, microphoneProblem, requireMicrophone } from './microphone.ts';

export function MicrophoneCheck() {
  const [state, setState] = useState<PermissionState | 'unknown'>();
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    void microphonePermission().then(setState);
  }, []);
  if (state === undefined || state === 'granted') return null;
  const ask = async () => {
    try {
      await requireMicrophone();
      setProblem(undefined);
      setState('granted');
    } catch (error) {
      setProblem(microphoneProblem(error) ?? (error instanceof Error ? error.message : String(error)));
    }
  };
  return (
    <div className="phone-microphone">
      {problem || state === 'denied' ? (
        <p className="phone-problem" role="alert" data-testid="microphone-problem">
          {problem ?? microphoneProblem({ name: 'NotAllowedError' })}
        </p>
      ) : (
        <p>Calls need your microphone.</p>
      )}
      <button type="button" className="secondary outline" onClick={ask}>
        Allow the microphone
      </button>
    </div>
  );
}
