/** Light or dark: the system's choice until the user picks one, which this browser then remembers. */
export type Theme = 'light' | 'dark';
const STORAGE_KEY = 'agentplane.theme';

export function initialTheme(): Theme {
  const chosen = localStorage.getItem(STORAGE_KEY);
  if (chosen === 'light' || chosen === 'dark') return chosen;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(theme: Theme, remember = false): void {
  document.documentElement.dataset.theme = theme;
  if (remember) localStorage.setItem(STORAGE_KEY, theme);
}
