import { AppError } from '../../../errors/catalog';

/**
 * The calculator tool: arithmetic for an AI agent, parsed and evaluated here.
 * No eval, Function or vm, and no library (expr-eval had a code-execution
 * CVE): the grammar below is all an expression can do.
 *
 *   expression := additive
 *   additive   := term (('+' | '-') term)*
 *   term       := unary (('*' | '/' | '%') unary)*
 *   unary      := ('-' | '+') unary | power
 *   power      := postfix (('^' | '**') unary)?        right-associative
 *   postfix    := primary '!'*
 *   primary    := number | constant | name '(' arguments ')' | '(' expression ')'
 *
 * Conventions:
 * - Unary minus binds looser than power, as in mathematics: -2^2 = -(2^2) = -4,
 *   while an exponent may carry its own sign: 2^-1 = 0.5, and 2^3^2 = 2^9 = 512.
 * - `%` is the remainder (sign of the dividend), not a percentage.
 * - `!` is the factorial of a non-negative integer (up to 170!, the last finite one).
 * - Names (constants and functions) are case-insensitive: PI = pi.
 * - Positions in error details are 1-based character columns.
 */

export const MAX_EXPRESSION_CHARS = 500;
/** Nesting of parentheses, signs and exponents together; bounds the parser's recursion. */
export const MAX_NESTING_DEPTH = 64;

type Token =
  | { kind: 'number'; value: number; pos: number; text: string }
  | { kind: 'name'; name: string; pos: number; text: string }
  | { kind: 'op'; op: string; pos: number; text: string }
  | { kind: 'end'; pos: number; text: string };

type Node =
  | { kind: 'number'; value: number; pos: number }
  | { kind: 'constant'; name: string; pos: number }
  | { kind: 'call'; name: string; args: Node[]; pos: number }
  | { kind: 'unary'; op: '-' | '+'; operand: Node; pos: number }
  | { kind: 'factorial'; operand: Node; pos: number }
  | { kind: 'binary'; op: '+' | '-' | '*' | '/' | '%' | '^'; left: Node; right: Node; pos: number };

interface MathFunction {
  minArgs: number;
  maxArgs: number;
  apply: (args: number[]) => number;
}

// Maps, not object literals: a name such as `constructor` or `__proto__` must
// find nothing rather than an inherited property.
const CONSTANTS = new Map<string, number>([
  ['pi', Math.PI],
  ['e', Math.E],
]);

const unary = (fn: (x: number) => number): MathFunction => ({ minArgs: 1, maxArgs: 1, apply: (args) => fn(args[0]) });
const variadic = (fn: (...xs: number[]) => number): MathFunction => ({
  minArgs: 1,
  maxArgs: Infinity,
  apply: (args) => fn(...args),
});

const FUNCTIONS = new Map<string, MathFunction>([
  ['sqrt', unary(Math.sqrt)],
  ['abs', unary(Math.abs)],
  // Math.round rounds -2.5 to -2; half away from zero is what people expect of round().
  ['round', unary((x) => Math.sign(x) * Math.round(Math.abs(x)))],
  ['floor', unary(Math.floor)],
  ['ceil', unary(Math.ceil)],
  ['min', variadic(Math.min)],
  ['max', variadic(Math.max)],
  ['log', unary(Math.log)],
  ['ln', unary(Math.log)],
  ['log10', unary(Math.log10)],
  ['log2', unary(Math.log2)],
  ['exp', unary(Math.exp)],
  ['sin', unary(Math.sin)],
  ['cos', unary(Math.cos)],
  ['tan', unary(Math.tan)],
]);

/** Operators, longest first so that `**` is not read as two `*`. */
const OPERATORS = ['**', '+', '-', '*', '/', '%', '^', '(', ')', ',', '!'];

function invalid(detail: string): AppError {
  return new AppError('validation_error', detail);
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i];
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }
    const pos = i + 1;
    if (isDigit(ch) || (ch === '.' && isDigit(source[i + 1]))) {
      const match = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(source.slice(i));
      // The guard above makes a match certain; the check keeps the types honest.
      if (!match) throw invalid(`Invalid number at position ${pos}`);
      const text = match[0];
      const value = Number(text);
      if (!Number.isFinite(value)) throw invalid(`Number ${text} at position ${pos} is out of range`);
      tokens.push({ kind: 'number', value, pos, text });
      i += text.length;
      continue;
    }
    if (isNameStart(ch)) {
      let j = i + 1;
      while (j < source.length && (isNameStart(source[j]) || isDigit(source[j]))) j++;
      const text = source.slice(i, j);
      tokens.push({ kind: 'name', name: text.toLowerCase(), pos, text });
      i = j;
      continue;
    }
    const op = OPERATORS.find((candidate) => source.startsWith(candidate, i));
    if (!op) throw invalid(`Unexpected character ${JSON.stringify(ch)} at position ${pos}`);
    tokens.push({ kind: 'op', op, pos, text: op });
    i += op.length;
  }
  tokens.push({ kind: 'end', pos: source.length + 1, text: 'end of input' });
  return tokens;
}

function isDigit(ch: string | undefined): boolean {
  return ch !== undefined && ch >= '0' && ch <= '9';
}

function isNameStart(ch: string): boolean {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch === '_';
}

class Parser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): Node {
    const node = this.expression();
    const next = this.peek();
    if (next.kind !== 'end') {
      throw invalid(
        next.kind === 'op' && next.op === ')'
          ? `Unbalanced ")" at position ${next.pos}`
          : `Unexpected ${describe(next)} at position ${next.pos}: expected an operator or the end of the expression`,
      );
    }
    return node;
  }

  private peek(): Token {
    return this.tokens[this.index];
  }

  private isOp(...ops: string[]): boolean {
    const token = this.peek();
    return token.kind === 'op' && ops.includes(token.op);
  }

  private expression(): Node {
    let left = this.term();
    while (this.isOp('+', '-')) {
      const token = this.tokens[this.index++] as { op: '+' | '-'; pos: number };
      left = { kind: 'binary', op: token.op, left, right: this.term(), pos: token.pos };
    }
    return left;
  }

  private term(): Node {
    let left = this.unary();
    while (this.isOp('*', '/', '%')) {
      const token = this.tokens[this.index++] as { op: '*' | '/' | '%'; pos: number };
      left = { kind: 'binary', op: token.op, left, right: this.unary(), pos: token.pos };
    }
    return left;
  }

  /** Every level of nesting (parentheses, arguments, signs, exponents) passes through here once. */
  private unary(): Node {
    if (++this.depth > MAX_NESTING_DEPTH) {
      throw invalid(`Expression nested too deeply at position ${this.peek().pos} (at most ${MAX_NESTING_DEPTH} levels)`);
    }
    let node: Node;
    if (this.isOp('-', '+')) {
      const token = this.tokens[this.index++] as { op: '-' | '+'; pos: number };
      node = { kind: 'unary', op: token.op, operand: this.unary(), pos: token.pos };
    } else {
      node = this.power();
    }
    this.depth--;
    return node;
  }

  private power(): Node {
    const base = this.postfix();
    if (!this.isOp('^', '**')) return base;
    const token = this.tokens[this.index++];
    // The exponent is a unary, so 2^-1 works and 2^3^2 groups to the right.
    return { kind: 'binary', op: '^', left: base, right: this.unary(), pos: token.pos };
  }

  private postfix(): Node {
    let node = this.primary();
    while (this.isOp('!')) {
      node = { kind: 'factorial', operand: node, pos: this.tokens[this.index++].pos };
    }
    return node;
  }

  private primary(): Node {
    const token = this.tokens[this.index];
    if (token.kind === 'number') {
      this.index++;
      return { kind: 'number', value: token.value, pos: token.pos };
    }
    if (token.kind === 'name') {
      this.index++;
      if (this.isOp('(')) return this.call(token.name, token.text, token.pos);
      if (CONSTANTS.has(token.name)) return { kind: 'constant', name: token.name, pos: token.pos };
      if (FUNCTIONS.has(token.name)) throw invalid(`Function ${token.text} at position ${token.pos} needs parentheses`);
      throw invalid(`Unknown name ${JSON.stringify(token.text)} at position ${token.pos}`);
    }
    if (token.kind === 'op' && token.op === '(') {
      this.index++;
      const inner = this.expression();
      this.expect(')', `Unbalanced "(" at position ${token.pos}: missing ")"`);
      return inner;
    }
    if (token.kind === 'end') {
      throw invalid(token.pos === 1 ? 'The expression is empty' : `Unexpected end of expression at position ${token.pos}`);
    }
    throw invalid(`Unexpected ${describe(token)} at position ${token.pos}: expected a number, a name or "("`);
  }

  private call(name: string, text: string, pos: number): Node {
    const fn = FUNCTIONS.get(name);
    if (!fn) throw invalid(`Unknown function ${JSON.stringify(text)} at position ${pos}`);
    this.index++; // (
    const args: Node[] = [];
    if (!this.isOp(')')) {
      args.push(this.expression());
      while (this.isOp(',')) {
        this.index++;
        args.push(this.expression());
      }
    }
    this.expect(')', `Unbalanced "(" after ${text} at position ${pos}: missing ")"`);
    if (args.length < fn.minArgs || args.length > fn.maxArgs) {
      const expected = fn.maxArgs === Infinity ? `at least ${fn.minArgs}` : String(fn.minArgs);
      throw invalid(`Function ${text} at position ${pos} takes ${expected} argument(s), got ${args.length}`);
    }
    return { kind: 'call', name, args, pos };
  }

  private expect(op: string, detail: string): void {
    const token = this.peek();
    if (token.kind === 'op' && token.op === op) {
      this.index++;
      return;
    }
    throw invalid(token.kind === 'end' ? detail : `${detail}; found ${describe(token)} at position ${token.pos}`);
  }
}

function describe(token: Token): string {
  return token.kind === 'end' ? 'end of input' : JSON.stringify(token.text);
}

/** Evaluates a node; every intermediate value must be finite. The input cap bounds the tree's depth to a few hundred. */
function evaluate(node: Node): number {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'constant':
      return CONSTANTS.get(node.name) as number;
    case 'unary': {
      const value = evaluate(node.operand);
      return node.op === '-' ? -value : value;
    }
    case 'factorial': {
      const value = evaluate(node.operand);
      if (!Number.isInteger(value) || value < 0) {
        throw invalid(`Factorial at position ${node.pos} needs a non-negative integer, got ${value}`);
      }
      return finite(factorial(value), node.pos, '!');
    }
    case 'call': {
      const fn = FUNCTIONS.get(node.name) as MathFunction;
      return finite(fn.apply(node.args.map(evaluate)), node.pos, node.name);
    }
    case 'binary': {
      const left = evaluate(node.left);
      const right = evaluate(node.right);
      switch (node.op) {
        case '+':
          return finite(left + right, node.pos, '+');
        case '-':
          return finite(left - right, node.pos, '-');
        case '*':
          return finite(left * right, node.pos, '*');
        case '/':
          if (right === 0) throw invalid(`Division by zero at position ${node.pos}`);
          return finite(left / right, node.pos, '/');
        case '%':
          if (right === 0) throw invalid(`Division by zero (remainder) at position ${node.pos}`);
          return finite(left % right, node.pos, '%');
        case '^':
          return finite(left ** right, node.pos, '^');
      }
    }
  }
}

function factorial(n: number): number {
  let result = 1;
  // Past 170 the product is Infinity anyway; stop early rather than loop a million times.
  for (let i = 2; i <= n && Number.isFinite(result); i++) result *= i;
  return result;
}

function finite(value: number, pos: number, what: string): number {
  if (Number.isNaN(value)) throw invalid(`The result of ${what} at position ${pos} is undefined (not a real number)`);
  if (!Number.isFinite(value)) throw invalid(`The result of ${what} at position ${pos} is too large (overflow)`);
  return value;
}

/**
 * Evaluates an arithmetic expression. Throws AppError validation_error (422)
 * for anything else: empty or over-long input, unknown names, syntax errors
 * (with their position), nesting beyond MAX_NESTING_DEPTH, and results that
 * are not finite numbers (division by zero, overflow, sqrt(-1)).
 */
export function calculate(expression: string): { expression: string; result: number } {
  if (typeof expression !== 'string') throw invalid('The expression must be a string');
  if (expression.length > MAX_EXPRESSION_CHARS) {
    throw invalid(`The expression is ${expression.length} characters long; at most ${MAX_EXPRESSION_CHARS} are allowed`);
  }
  const tree = new Parser(tokenize(expression)).parse();
  const result = evaluate(tree);
  // -0 is an artefact of floating point (e.g. -0 * 5), not an answer anyone wants to read.
  return { expression, result: Object.is(result, -0) ? 0 : result };
}
