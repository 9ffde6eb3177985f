/** A secret the API returns once (an API key, a webhook signing secret): shown here, then never again. */
import { useEffect, useRef, useState } from 'preact/hooks';

export function SecretOnce({ label, secret, onDone }: { label: string; secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState<string>();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [secret]);

  async function copy() {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the text and copy it.');
    }
  }

  return (
    <section class="secret-once" aria-labelledby="secret-once-title">
      <h2 id="secret-once-title" tabindex={-1} ref={heading}>
        {label}
      </h2>
      <p>
        <strong>Copy it now: you will not see it again.</strong> The API keeps only its hash.
      </p>
      <div class="row">
        <code class="secret">{secret}</code>
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
        <button type="button" class="plain" onClick={onDone}>
          Done
        </button>
      </div>
      <p class="muted" role="status" aria-live="polite">
        {copied}
      </p>
    </section>
  );
}
