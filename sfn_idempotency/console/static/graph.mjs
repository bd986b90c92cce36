// The graph of a definition: the same transitions `sfn-idempotency graph` draws (see
// sfn_idempotency/flow/graph.py; a test holds the two equal), with nested scopes for Parallel branches
// and Map item processors. Pure data: rendering is render.mjs's.

const COMPARISONS = {
  StringEquals: "==",
  StringEqualsPath: "==",
  NumericEquals: "==",
  NumericLessThanEqualsPath: "<=",
  NumericLessThanPath: "<",
  NumericGreaterThan: ">",
  BooleanEquals: "==",
  IsPresent: "present ==",
};

export const END = "[*]";

export function conditionLabel(rule) {
  for (const [combinator, joiner] of [["And", " and "], ["Or", " or "]]) {
    if (combinator in rule) return rule[combinator].map(conditionLabel).join(joiner);
  }
  if ("Not" in rule) return `not (${conditionLabel(rule.Not)})`;
  if ("Condition" in rule) return String(rule.Condition).replace(/^\{%/, "").replace(/%\}$/, "").trim();
  const variable = String(rule.Variable).replace(/^\$\./, "");
  for (const [key, operator] of Object.entries(COMPARISONS)) {
    if (key in rule) {
      const value = rule[key];
      const shown = key.endsWith("Path") ? String(value).replace(/^\$\./, "") : JSON.stringify(value);
      return `${variable} ${operator} ${shown}`;
    }
  }
  return variable;
}

// [target, label] pairs, in the order graph.py lists them.
export function transitions(state) {
  const found = (state.Choices || []).map((choice) => [choice.Next, conditionLabel(choice)]);
  if ("Default" in state) found.push([state.Default, "otherwise"]);
  for (const handler of state.Catch || []) found.push([handler.Next, "catch " + handler.ErrorEquals.join(", ")]);
  if ("Next" in state) found.push([state.Next, ""]);
  if (state.End || state.Type === "Succeed" || state.Type === "Fail") found.push([END, ""]);
  return found;
}

function nestedFlows(name, state) {
  if (state.Type === "Parallel") return (state.Branches || []).map((branch, i) => [`${name} · branch ${i + 1}`, branch]);
  const processor = state.ItemProcessor || state.Iterator;
  return state.Type === "Map" && processor ? [[`${name} · items`, processor]] : [];
}

// {nodes, edges, scopes}: a node per state (id "s:<name>", state names are unique in a machine)
// and a start and end marker per scope; nested flows are scopes inside their state's scope.
export function graphOf(definition) {
  const nodes = [];
  const edges = [];
  const scopes = [];
  function addScope(flow, scope, parentScope, owner) {
    scopes.push({ id: scope, parent: parentScope, owner });
    const start = `start:${scope}`;
    const end = `end:${scope}`;
    nodes.push({ id: start, kind: "start", scope }, { id: end, kind: "end", scope });
    edges.push({ from: start, to: `s:${flow.StartAt}`, label: "", kind: "start" });
    for (const [name, state] of Object.entries(flow.States || {})) {
      nodes.push({ id: `s:${name}`, kind: "state", name, type: state.Type, scope });
      for (const [target, label] of transitions(state)) {
        edges.push({ from: `s:${name}`, to: target === END ? end : `s:${target}`, label, kind: label.startsWith("catch ") ? "catch" : "next" });
      }
      nestedFlows(name, state).forEach(([title, nested], i) => {
        const inner = `${scope}/${name}/${i}`;
        addScope(nested, inner, scope, { name, title });
        edges.push({ from: `s:${name}`, to: `start:${inner}`, label: "", kind: "nested" });
      });
    }
  }
  addScope(definition, "", null, null);
  return { nodes, edges, scopes };
}

export function queryLanguage(definition) {
  return definition.QueryLanguage || "JSONPath";
}

// {name: transitions(state)} for every state of a flow (the tests compare it with graph.py's).
export function transitionsOfEach(states) {
  return Object.fromEntries(Object.entries(states).map(([name, state]) => [name, transitions(state)]));
}
