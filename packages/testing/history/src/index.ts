export * from './history.js';
export * from './errors.js';
export * from './limits.js';
export { parseHistory, readHistory } from './parse.js';
export { check, checkText, type CheckOptions } from './check.js';
export { RULES } from './findings.js';
export { renderText } from './report-text.js';
export { renderSvg } from './report-svg.js';
