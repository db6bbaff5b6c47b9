// The phone engine for the components of the dock: one per signed-in page load, started once and stopped when
// the dock goes (sign-out, another organization). Components read its snapshot with useSyncExternalStore, so
// a call's state shows wherever the member navigates.
import { createContext, type ReactNode, useContext, useEffect, useState, useSyncExternalStore } from 'react';
import { PhoneEngine, type PhoneSnapshot } from './engine.ts';
import { setRunningPhone } from './registry.ts';

const PhoneContext = createContext<PhoneEngine | undefined>(undefined);

export function PhoneProvider({ children }: { children: ReactNode }) {
  const [engine, setEngine] = useState<PhoneEngine>();
  useEffect(() => {
    const started = new PhoneEngine();
    setEngine(started);
    setRunningPhone(() => started.stop());
    void started.start();
    return () => {
      setRunningPhone(undefined);
      void started.stop();
    };
  }, []);
  if (!engine) return null;
  return <PhoneContext.Provider value={engine}>{children}</PhoneContext.Provider>;
}

export function usePhone(): { engine: PhoneEngine; phone: PhoneSnapshot } {
  const engine = useContext(PhoneContext);
  if (!engine) throw new Error('usePhone() outside the PhoneProvider');
  const phone = useSyncExternalStore(engine.subscribe, engine.getSnapshot);
  return { engine, phone };
}
