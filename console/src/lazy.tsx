/**
 * A view loaded on first use, so that the charts and the graph drawing stay out of the first page's script.
 */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ErrorNotice, Loading } from './components/states';

// Each view declares the route parameters it reads; the router gives every view all of them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyView = ComponentType<any>;

export function lazyView(load: () => Promise<{ default: AnyView }>, what: string): AnyView {
  let loaded: AnyView | undefined;
  return function LazyView(props: object) {
    const [View, setView] = useState<AnyView | undefined>(() => loaded);
    const [error, setError] = useState<Error>();
    useEffect(() => {
      if (View) return;
      load().then((module) => setView(() => (loaded = module.default)), setError);
    }, []);
    if (error) return <ErrorNotice error={error} />;
    return View ? <View {...props} /> : <Loading what={what} />;
  };
}
