// DOM and SVG building. Every piece of data goes in as text (textContent, attribute values), never
// as markup: state names, inputs and records may hold HTML and must show as written.

const SVG = "http://www.w3.org/2000/svg";
const CHAR_WIDTH_PX = 7.2;
const NODE_PADDING_PX = 28;
const NODE_HEIGHT_PX = 34;
const MARKER_SIZE_PX = 16;
const LABEL_MAX_CHARS = 40;
const MIN_SCALE = 0.6;
const EDGE_LABEL_MAX_CHARS = 26;

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "on") for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null && child !== false) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function shorten(text, limit = LABEL_MAX_CHARS) {
  return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
}

// Whether the execution went along `edge`: from the start to its first state, into a nested flow
// whose state it entered, to the end from a state it left (or a Fail state), or from one state to
// the next it entered.
function edgeClass(edge, path, byId) {
  if (!path) return "";
  const from = byId.get(edge.from);
  const to = byId.get(edge.to);
  let taken;
  if (edge.kind === "start") taken = path.visited.has(to.name);
  else if (edge.kind === "nested") taken = path.visited.has(from.name);
  else if (to.kind === "end") taken = from.type === "Fail" ? path.visited.has(from.name) : path.steps.some((s) => s.name === from.name && s.exited);
  else taken = path.taken.has(`${from.name}\u0000${to.name}`);
  return taken ? "taken" : "";
}

// An SVG of the graph; with `path` (history.mjs's pathOf) the visited states, the edges taken and
// the failed or caught states are marked. `onSelect(name)` runs when a state is clicked.
export function drawGraph(graph, path = null, onSelect = null) {
  const layout = new globalThis.dagre.graphlib.Graph({ compound: true, multigraph: true });
  layout.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 36, marginx: 12, marginy: 12 });
  layout.setDefaultEdgeLabel(() => ({}));
  const byId = new Map(graph.nodes.map((node) => [node.id, node]));
  for (const scope of graph.scopes) {
    if (scope.owner) layout.setNode(`scope:${scope.id}`, { label: scope.owner.title, clusterLabelPos: "top", paddingTop: 24 });
  }
  for (const scope of graph.scopes) {
    if (scope.owner && scope.parent) layout.setParent(`scope:${scope.id}`, `scope:${scope.parent}`);
  }
  for (const node of graph.nodes) {
    const size = node.kind === "state"
      ? { width: shorten(node.name).length * CHAR_WIDTH_PX + NODE_PADDING_PX, height: NODE_HEIGHT_PX }
      : { width: MARKER_SIZE_PX, height: MARKER_SIZE_PX };
    layout.setNode(node.id, size);
    if (node.scope) layout.setParent(node.id, `scope:${node.scope}`);
  }
  graph.edges.forEach((edge, i) => {
    const label = shorten(edge.label, EDGE_LABEL_MAX_CHARS);
    layout.setEdge(edge.from, edge.to, label ? { label, width: label.length * 6.2, height: 14 } : {}, `e${i}`);
  });
  globalThis.dagre.layout(layout);

  const { width, height } = layout.graph();
  const root = svg("svg", { class: "graph", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
  root.appendChild(svg("defs")).append(arrowMarker());
  for (const scope of graph.scopes) {
    if (!scope.owner) continue;
    const box = layout.node(`scope:${scope.id}`);
    const group = root.appendChild(svg("g", { class: "scope" }));
    group.append(svg("rect", { x: box.x - box.width / 2, y: box.y - box.height / 2, width: box.width, height: box.height, rx: 6 }));
    group.append(svg("text", { x: box.x - box.width / 2 + 8, y: box.y - box.height / 2 + 15 }, scope.owner.title));
  }
  graph.edges.forEach((edge, i) => {
    const points = layout.edge({ v: edge.from, w: edge.to, name: `e${i}` });
    const group = root.appendChild(svg("g", { class: `edge ${edge.kind} ${edgeClass(edge, path, byId)}`.trim(), "data-from": byId.get(edge.from).name || edge.from, "data-to": byId.get(edge.to).name || edge.to }));
    group.append(svg("polyline", { points: points.points.map((p) => `${p.x},${p.y}`).join(" "), "marker-end": "url(#arrow)" }));
    if (points.label) {
      const text = group.appendChild(svg("text", { x: points.x, y: points.y + 4, "text-anchor": "middle" }, points.label));
      text.append(svg("title", {}, edge.label));
    }
  });
  for (const node of graph.nodes) {
    const box = layout.node(node.id);
    if (node.kind !== "state") {
      const group = root.appendChild(svg("g", { class: `marker ${node.kind}` }));
      group.append(svg("circle", { cx: box.x, cy: box.y, r: MARKER_SIZE_PX / 2 }));
      continue;
    }
    const classes = ["node", `type-${node.type}`];
    if (path && path.visited.has(node.name)) classes.push("visited");
    if (path && path.failedState === node.name) classes.push("failed");
    if (path && path.caughtStates.has(node.name)) classes.push("caught");
    const group = root.appendChild(svg("g", { class: classes.join(" "), "data-state": node.name, tabindex: 0 }));
    group.append(svg("title", {}, `${node.name} (${node.type})`));
    group.append(svg("rect", { x: box.x - box.width / 2, y: box.y - box.height / 2, width: box.width, height: box.height, rx: 5 }));
    group.append(svg("text", { x: box.x, y: box.y + 4, "text-anchor": "middle" }, shorten(node.name)));
    if (onSelect) group.addEventListener("click", () => onSelect(node.name));
  }
  return root;
}

function arrowMarker() {
  // In user space, so a highlighted (thicker) edge keeps the same arrow head.
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }));
  return marker;
}

// Shrink a graph wider than its box to fit, down to MIN_SCALE; past that, the box scrolls.
export function fitGraph(box, graphSvg) {
  const natural = Number(graphSvg.getAttribute("width"));
  const available = box.clientWidth - 20;
  if (natural <= available) return;
  const width = Math.max(available, natural * MIN_SCALE);
  graphSvg.setAttribute("height", (Number(graphSvg.getAttribute("height")) * width) / natural);
  graphSvg.setAttribute("width", width);
}

// JSON shown as indented text; anything that is not JSON is shown as it is.
export function jsonBlock(text) {
  let shown = text;
  if (typeof text === "string") {
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch { shown = text; }
  } else if (text !== undefined) {
    shown = JSON.stringify(text, null, 2);
  }
  return el("pre", { class: "json" }, shown === undefined ? "—" : shown);
}
