import { render } from 'preact';
import { App } from './app';
import { applyTheme, initialTheme } from './theme';
import './styles.css';

applyTheme(initialTheme());
render(<App />, document.getElementById('app')!);
