import { AppError } from '../../../errors/catalog';

export const CALCULATOR_MAX_LENGTH = 500;
const MAX_DEPTH = 64;

/** Functions by name, in a Map: no lookup can reach Object.prototype (`constructor`, `__proto__`). */
const FUNCTIONS = new Map<string, { arity: [number, number]; fn: (...args: number[]) => number }>([
  ['sqrt', { arity: [1, 1], fn: Math.sqrt }],
  ['abs', { arity: [1, 1], fn: Math.abs }],
  ['round', { arity: [1, 1], fn: Math.round }],
  ['floor', { arity: [1, 1], fn: Math.floor }],
  ['ceil', { arity: [1, 1], fn: Math.ceil }],
  ['exp', { arity: [1, 1], fn: Math.exp }],
  ['log', { arity: [1, 1], fn: Math.log }],
  ['ln', { arity: [1, 1], fn: Math.log }],
  ['log10', { arity: [1, 1], fn: Math.log10 }],
  ['log2', { arity: [1, 1], fn: Math.log2 }],
  ['sin', { arity: [1, 1], fn: Math.sin }],
  ['cos', { arity: [1, 1], fn: Math.cos }],
  ['tan', { arity: [1, 1], fn: Math.tan }],
  ['min', { arity: [1, 50], fn: Math.min }],
  ['max', { arity: [1, 50], fn: Math.max }],
]);
const CONSTANTS = new Map<string, number>([
  ['pi', Math.PI],
  ['e', Math.E],
]);

type Token = { kind: 'num'; value: number; at: number } | { kind: 'id'; name: string; at: number } | { kind: 'op'; op: string; at: number };

function invalid(detail: string): AppError {
  return AppError.validation([{ loc: ['expression'], msg: detail, type: 'expression' }], `Not an expression the calculator accepts: ${detail}`);
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s*(?:(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*/%^(),!]))/y;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    pattern.lastIndex = at;
    const m = pattern.exec(text);
    if (!m) throw invalid(`unexpected character at position ${at + (text.slice(at).length - text.slice(at).trimStart().length) + 1}`);
    const start = m.index + m[0].length - (m[1] ?? m[2] ?? m[3])!.length;
    if (m[1] !== undefined) tokens.push({ kind: 'num', value: Number(m[1]), at: start });
    else if (m[2] !== undefined) tokens.push({ kind: 'id', name: m[2], at: start });
    else tokens.push({ kind: 'op', op: m[3] === '**' ? '^' : m[3]!, at: start });
    at = pattern.lastIndex;
  }
  return tokens;
}

/**
 * Arithmetic for the agent's calculator tool, by a recursive-descent parser
 * written here: numbers, + - * / % ^ (or **, right-associative, binding
 * tighter than unary minus: -2^2 is -4), factorial !, parentheses, pi, e and
 * the functions in FUNCTIONS. Never eval: an identifier is a constant or a
 * function of the tables above, or an error.
 */
export function calculate(expression: string): { expression: string; result: number } {
  if (typeof expression !== 'string' || !expression.trim()) throw invalid('empty expression');
  if (expression.length > CALCULATOR_MAX_LENGTH) throw invalid(`longer than ${CALCULATOR_MAX_LENGTH} characters`);
  const tokens = tokenize(expression);
  let i = 0;
  let depth = 0;
  const peek = () => tokens[i];
  const isOp = (op: string) => {
    const t = tokens[i];
    return t?.kind === 'op' && t.op === op;
  };
  const expect = (op: string) => {
    if (!isOp(op)) throw invalid(`expected "${op}" at ${where()}`);
    i++;
  };
  const where = () => (tokens[i] ? `position ${tokens[i]!.at + 1}` : 'the end');
  const nest = <T>(fn: () => T): T => {
    if (++depth > MAX_DEPTH) throw invalid(`nested deeper than ${MAX_DEPTH} levels`);
    try {
      return fn();
    } finally {
      depth--;
    }
  };

  // sum := product (('+' | '-') product)*
  const sum = (): number =>
    nest(() => {
      let value = product();
      while (isOp('+') || isOp('-')) {
        const op = (tokens[i++] as { op: string }).op;
        const right = product();
        value = op === '+' ? value + right : value - right;
      }
      return value;
    });
  // product := unary (('*' | '/' | '%') unary)*
  const product = (): number => {
    let value = unary();
    while (isOp('*') || isOp('/') || isOp('%')) {
      const op = (tokens[i++] as { op: string }).op;
      const right = unary();
      if ((op === '/' || op === '%') && right === 0) throw invalid('division by zero');
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  };
  // unary := ('-' | '+') unary | power
  const unary = (): number => nest(() => (isOp('-') ? (i++, -unary()) : isOp('+') ? (i++, unary()) : power()));
  // power := postfix ('^' unary)?   (right-associative; the exponent may carry a sign)
  const power = (): number => {
    const base = postfix();
    if (!isOp('^')) return base;
    i++;
    return Math.pow(base, unary());
  };
  // postfix := primary '!'*
  const postfix = (): number => {
    let value = primary();
    while (isOp('!')) {
      i++;
      if (!Number.isInteger(value) || value < 0 || value > 170) throw invalid('factorial takes a whole number from 0 to 170');
      let f = 1;
      for (let k = 2; k <= value; k++) f *= k;
      value = f;
    }
    return value;
  };
  const primary = (): number => {
    const t = peek();
    if (!t) throw invalid('the expression ends too early');
    if (t.kind === 'num') {
      i++;
      return t.value;
    }
    if (t.kind === 'op' && t.op === '(') {
      i++;
      const value = sum();
      expect(')');
      return value;
    }
    if (t.kind === 'id') {
      i++;
      const name = t.name.toLowerCase();
      const fn = FUNCTIONS.get(name);
      if (fn) {
        expect('(');
        const args = [sum()];
        while (isOp(',')) {
          i++;
          args.push(sum());
        }
        expect(')');
        if (args.length < fn.arity[0] || args.length > fn.arity[1]) throw invalid(`${name} takes ${fn.arity[0] === fn.arity[1] ? fn.arity[0] : `${fn.arity[0]} to ${fn.arity[1]}`} argument(s)`);
        return fn.fn(...args);
      }
      const constant = CONSTANTS.get(name);
      if (constant !== undefined) return constant;
      throw invalid(`unknown name "${t.name}" at position ${t.at + 1}`);
    }
    throw invalid(`unexpected "${t.op}" at position ${t.at + 1}`);
  };

  const result = sum();
  if (i < tokens.length) throw invalid(`unexpected input at ${where()}`);
  if (!Number.isFinite(result)) throw invalid('the result is not a finite number');
  return { expression, result };
}
