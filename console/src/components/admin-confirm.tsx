/** A destructive action asked twice: the first press names what will happen, the second does it. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export function ConfirmButton({
  label,
  confirmLabel,
  question,
  onConfirm,
  disabled,
}: {
  /** The button's name, e.g. `Delete`. */
  label: string;
  /** The second button's name, e.g. `Delete endpoint`. */
  confirmLabel: string;
  question: ComponentChildren;
  onConfirm: () => Promise<void> | void;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const confirm = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirm.current?.focus();
  }, [asking]);

  if (!asking) {
    return (
      <button type="button" class="danger" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={confirmLabel}>
      <span>{question}</span>
      <button
        type="button"
        class="danger"
        ref={confirm}
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          try {
            await onConfirm();
          } finally {
            setBusy(false);
            setAsking(false);
          }
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" class="plain" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
