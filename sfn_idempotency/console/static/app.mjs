// The console's views, routed by the URL's hash. Each view reads what it shows through the AWS
// APIs of the endpoint (aws.mjs) and redraws itself while executions run.
import { allPages, awsClient } from "./aws.mjs";
import { graphOf, queryLanguage } from "./graph.mjs";
import { fromApiEvent, fromLogRecord, pathOf } from "./history.mjs";
import { drawGraph, el, fitGraph, jsonBlock } from "./render.mjs";

const REFRESH_MS = 2000;
const COUNTDOWN_MS = 1000;
const EXECUTIONS_PAGE_SIZE = 50;
const RECORDS_PAGE_SIZE = 50;
const STATUSES = ["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"];

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content;
const region = meta("sfn-region") || "us-east-1";
const actionsOn = meta("sfn-console-actions") === "on";
const call = awsClient(region);
const main = document.getElementById("main");
let timers = [];

function every(ms, work) {
  const timer = setInterval(() => { if (document.visibilityState === "visible") work(); }, ms);
  timers.push(timer);
}

// replaceChildren would show a null or false child as text; a view leaves out what it lacks.
function fill(parent, ...children) {
  parent.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
}

function graphBox(graphSvg) {
  const box = el("div", { class: "graph-box" }, graphSvg);
  requestAnimationFrame(() => fitGraph(box, graphSvg));
  return box;
}

function link(hash, text, attributes = {}) {
  return el("a", { href: hash, ...attributes }, text);
}

function route(view, params) {
  return `#/${view}?${new URLSearchParams(params)}`;
}

function shortTime(seconds) {
  return seconds === undefined ? "" : new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 23);
}

function duration(start, stop) {
  if (start === undefined) return "";
  const seconds = (stop === undefined ? Date.now() / 1000 : stop) - start;
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(1)} s`;
}

function showError(error) {
  const banner = document.getElementById("error");
  banner.textContent = String(error.message || error);
  banner.hidden = false;
}

function status(value) {
  return el("span", { class: `status status-${String(value).toLowerCase()}` }, value);
}

async function describeMachine(arn) {
  const description = await call("states", "DescribeStateMachine", { stateMachineArn: arn });
  description.parsed = JSON.parse(description.definition);
  return description;
}

// -- state machines -------------------------------------------------------------------------
async function machinesView() {
  const machines = await allPages(call, "states", "ListStateMachines", {}, "stateMachines");
  const described = await Promise.all(machines.map((m) => describeMachine(m.stateMachineArn)));
  const rows = described.map((m) =>
    el("tr", { "data-machine": m.name },
      el("td", {}, link(route("machine", { arn: m.stateMachineArn }), m.name)),
      el("td", {}, m.type === "EXPRESS" ? "Express" : "Standard"),
      el("td", {}, queryLanguage(m.parsed)),
      el("td", {}, shortTime(m.creationDate))));
  fill(main,
    el("h1", {}, "State machines"),
    el("table", { class: "list", id: "machines" },
      el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Type"), el("th", {}, "Query language"), el("th", {}, "Created"))),
      el("tbody", {}, rows)));
}

// -- one state machine and its executions ---------------------------------------------------
async function machineView(params) {
  const arn = params.get("arn");
  const machine = await describeMachine(arn);
  const express = machine.type === "EXPRESS";
  const list = el("div", { id: "executions" });
  const outcomesBox = el("div", { id: "outcomes-box" });
  fill(main,
    el("p", { class: "crumbs" }, link("#/", "State machines"), " / ", machine.name),
    el("h1", {}, machine.name),
    el("p", { class: "facts" }, express ? "Express" : "Standard", " · ", queryLanguage(machine.parsed), " · ", el("code", {}, arn)),
    graphBox(drawGraph(graphOf(machine.parsed))),
    outcomesBox,
    actionsOn ? startForm(machine) : null,
    el("h2", {}, "Executions"),
    list);
  const showOutcomes = () => outcomesTable(machine).then((table) => fill(outcomesBox, ...(table ? [el("h2", {}, "Outcomes"), table] : [])));
  await showOutcomes();
  every(REFRESH_MS, () => showOutcomes().catch(showError));
  if (express) {
    await expressExecutions(machine, list);
    return;
  }
  const filter = el("select", { id: "status-filter", on: { change: () => { location.hash = route("machine", { arn, status: filter.value }); } } },
    el("option", { value: "" }, "any status"),
    STATUSES.map((s) => el("option", { value: s, selected: params.get("status") === s }, s)));
  const tokens = params.get("tokens") ? params.get("tokens").split(",") : [];
  async function refresh() {
    const request = { stateMachineArn: arn, maxResults: EXECUTIONS_PAGE_SIZE };
    if (params.get("status")) request.statusFilter = params.get("status");
    if (tokens.length) request.nextToken = tokens[tokens.length - 1];
    const page = await call("states", "ListExecutions", request);
    const older = page.nextToken ? link(route("machine", { ...Object.fromEntries(params), tokens: [...tokens, page.nextToken].join(",") }), "Older →", { id: "older" }) : null;
    const newer = tokens.length ? link(route("machine", { ...Object.fromEntries(params), tokens: tokens.slice(0, -1).join(",") }), "← Newer", { id: "newer" }) : null;
    fill(list,
      el("div", { class: "toolbar" }, el("label", {}, "Status ", filter), newer, older),
      executionsTable(page.executions.map((e) => ({ ...e, href: route("execution", { arn: e.executionArn }) }))));
  }
  await refresh();
  every(REFRESH_MS, () => refresh().catch(showError));
}

// -- idempotency outcomes: the metric filters on the machine's logs, counted by CloudWatch -----
const OUTCOME_NAMESPACE = "SfnIdempotency/";
const COUNT_WINDOW_S = 30 * 86400; // one period around now, as LocalCloud.outcome_counts reads them

async function outcomesTable(machine) {
  const group = logGroupOf(machine);
  if (!group) return null;
  const filters = await allPages(call, "logs", "DescribeMetricFilters", { logGroupName: group }, "metricFilters");
  const metrics = filters.flatMap((f) => f.metricTransformations).filter((m) => m.metricNamespace.startsWith(OUTCOME_NAMESPACE));
  if (!metrics.length) return null;
  const now = Math.floor(Date.now() / 1000);
  const counted = await Promise.all(metrics.map(async (m) => {
    const answer = await call("monitoring", "GetMetricStatistics", {
      Namespace: m.metricNamespace, MetricName: m.metricName, Statistics: ["Sum"],
      StartTime: now - COUNT_WINDOW_S, EndTime: now + COUNT_WINDOW_S, Period: 2 * COUNT_WINDOW_S,
    });
    return { ...m, count: (answer.Datapoints || []).reduce((sum, point) => sum + point.Sum, 0) };
  }));
  const outcomes = [...new Set(counted.map((m) => m.metricName))];
  const steps = [...new Set(counted.map((m) => m.metricNamespace))];
  const count = (step, outcome) => counted.find((m) => m.metricNamespace === step && m.metricName === outcome)?.count ?? 0;
  return el("table", { class: "list", id: "outcomes" },
    el("thead", {}, el("tr", {}, el("th", {}, "Key prefix"), outcomes.map((o) => el("th", {}, o)))),
    el("tbody", {}, steps.map((step) =>
      el("tr", { "data-namespace": step },
        el("td", {}, step.split("/").slice(2).join("/")),
        outcomes.map((o) => el("td", { "data-outcome": o }, String(count(step, o))))))));
}

function executionsTable(executions) {
  return el("table", { class: "list", id: "execution-list" },
    el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Status"), el("th", {}, "Started"), el("th", {}, "Duration"))),
    el("tbody", {}, executions.map((e) =>
      el("tr", { "data-name": e.name, "data-status": e.status },
        el("td", {}, link(e.href, e.name)),
        el("td", {}, status(e.status)),
        el("td", {}, shortTime(e.startDate)),
        el("td", {}, duration(e.startDate, e.stopDate))))));
}

// Express executions have no history API; with logging on, Step Functions writes their events to
// CloudWatch Logs, and that is where the console reads them (as AWS's console does).
function logGroupOf(machine) {
  const destination = machine.loggingConfiguration?.destinations?.[0]?.cloudWatchLogsLogGroup?.logGroupArn;
  return destination ? destination.split(":log-group:")[1].split(":")[0] : null;
}

async function expressRecords(logGroupName, executionArn = null) {
  const request = { logGroupName, limit: 10000 };
  if (executionArn) request.filterPattern = `"${executionArn}"`;
  const events = await allPages(call, "logs", "FilterLogEvents", request, "events");
  return events.map((e) => JSON.parse(e.message)).filter((r) => !executionArn || r.execution_arn === executionArn);
}

// An execution's status from its last event, as DescribeExecution would say it.
const ENDING_STATUS = { ExecutionSucceeded: "SUCCEEDED", ExecutionFailed: "FAILED", ExecutionAborted: "ABORTED", ExecutionTimedOut: "TIMED_OUT" };

function statusOf(ending) {
  return ending ? ENDING_STATUS[ending.type] : "RUNNING";
}

async function expressExecutions(machine, list) {
  const logGroupName = logGroupOf(machine);
  if (!logGroupName) {
    fill(list, el("p", {}, "This Express state machine logs to no CloudWatch Logs group, so no execution of it can be shown."));
    return;
  }
  async function refresh() {
    const byExecution = new Map();
    for (const record of await expressRecords(logGroupName)) {
      const events = byExecution.get(record.execution_arn) || [];
      events.push(fromLogRecord(record));
      byExecution.set(record.execution_arn, events);
    }
    const executions = [...byExecution].map(([executionArn, events]) => {
      events.sort((a, b) => a.id - b.id);
      const { ending } = pathOf(events);
      return {
        name: executionArn.split(":").slice(-2).join(":"),
        status: statusOf(ending),
        startDate: events[0].timestamp,
        stopDate: ending ? events[events.length - 1].timestamp : undefined,
        href: route("execution", { arn: executionArn, logGroup: logGroupName, machine: machine.stateMachineArn }),
      };
    }).sort((a, b) => b.startDate - a.startDate);
    fill(list, el("p", { class: "facts" }, "From CloudWatch Logs group ", el("code", {}, logGroupName)), executionsTable(executions));
  }
  await refresh();
  every(REFRESH_MS, () => refresh().catch(showError));
}

function startForm(machine) {
  const input = el("textarea", { id: "start-input", rows: 4, spellcheck: "false" }, "{}");
  const name = el("input", { id: "start-name", placeholder: "name (optional)" });
  const problem = el("p", { class: "form-error", id: "start-error", hidden: true });
  const result = el("div", { id: "start-result" });
  async function start(event) {
    event.preventDefault();
    problem.hidden = true;
    let parsed;
    try {
      parsed = JSON.parse(input.value);
    } catch (error) {
      problem.textContent = `The input is not JSON: ${error.message}`;
      problem.hidden = false;
      return;
    }
    const request = { stateMachineArn: machine.stateMachineArn, input: JSON.stringify(parsed) };
    if (name.value.trim()) request.name = name.value.trim();
    try {
      if (machine.type === "EXPRESS") {
        const answer = await call("states", "StartSyncExecution", request);
        fill(result, status(answer.status), jsonBlock(answer.output ?? `${answer.error}: ${answer.cause}`));
      } else {
        const answer = await call("states", "StartExecution", request);
        location.hash = route("execution", { arn: answer.executionArn });
      }
    } catch (error) {
      problem.textContent = error.message;
      problem.hidden = false;
    }
  }
  return el("form", { class: "action", id: "start-form", on: { submit: start } },
    el("h2", {}, "Start an execution"), input, el("div", {}, name, el("button", { type: "submit" }, "Start")), problem, result);
}

// -- one execution ----------------------------------------------------------------------------
async function executionView(params) {
  const arn = params.get("arn");
  const logGroupName = params.get("logGroup");
  let machine = null; // its definition does not change while the view redraws the execution
  async function load() {
    if (logGroupName) {
      machine ??= await describeMachine(params.get("machine"));
      const events = (await expressRecords(logGroupName, arn)).map(fromLogRecord).sort((a, b) => a.id - b.id);
      const { ending } = pathOf(events);
      return { machine, events, description: { name: arn.split(":").slice(-2).join(":"), status: statusOf(ending), startDate: events[0]?.timestamp } };
    }
    const [description, raw] = await Promise.all([
      call("states", "DescribeExecution", { executionArn: arn }),
      allPages(call, "states", "GetExecutionHistory", { executionArn: arn, maxResults: 1000 }, "events"),
    ]);
    machine ??= await describeMachine(description.stateMachineArn);
    return { machine, description, events: raw.map(fromApiEvent) };
  }
  async function draw() {
    const { machine, description, events } = await load();
    const path = pathOf(events);
    const selected = el("div", { id: "step-detail" });
    const select = (name) => {
      const step = [...path.steps].reverse().find((s) => s.name === name);
      fill(selected, step ? stepDetail(step) : el("p", {}, `${name} was not entered.`));
    };
    fill(main,
      el("p", { class: "crumbs" }, link("#/", "State machines"), " / ", link(route("machine", { arn: machine.stateMachineArn }), machine.name), " / ", description.name),
      el("h1", {}, description.name, " ", status(description.status)),
      el("p", { class: "facts" }, "Started ", shortTime(description.startDate), " · ", duration(description.startDate, description.stopDate)),
      path.ending && path.ending.error !== undefined ? errorAndCause("execution-error", path.ending.error, path.ending.cause) : null,
      graphBox(drawGraph(graphOf(machine.parsed), path, select)),
      selected,
      el("h2", {}, "States"),
      stepsTable(path.steps),
      el("h2", {}, "Events"),
      eventsTable(events));
    return description.status;
  }
  if ((await draw()) === "RUNNING") {
    every(REFRESH_MS, () => draw().catch(showError));
  }
}

// The error in full view; the cause (a stack trace, often) folded under it.
function errorAndCause(id, error, cause) {
  return el("div", { class: "error-and-cause", id },
    el("p", { class: "error-name" }, error ?? ""),
    cause ? el("details", {}, el("summary", {}, "Cause"), el("pre", { class: "cause" }, cause)) : null);
}

function stepDetail(step) {
  return el("div", { class: "step" },
    el("h3", {}, step.name, " ", status(step.status)),
    step.error !== undefined ? errorAndCause(null, step.error, step.cause) : null,
    el("div", { class: "io" }, el("div", {}, el("h4", {}, "Input"), jsonBlock(step.input)), el("div", {}, el("h4", {}, "Output"), jsonBlock(step.output))));
}

function stepsTable(steps) {
  return el("table", { class: "list", id: "steps" },
    el("thead", {}, el("tr", {}, ["State", "Status", "Input", "Output", "Error"].map((h) => el("th", {}, h)))),
    el("tbody", {}, steps.map((step) =>
      el("tr", { "data-state": step.name, "data-status": step.status },
        el("td", {}, step.name),
        el("td", {}, status(step.status)),
        el("td", {}, jsonBlock(step.input)),
        el("td", {}, jsonBlock(step.output)),
        el("td", {}, step.error === undefined ? "" : errorAndCause(null, step.error, step.cause))))));
}

function eventsTable(events) {
  return el("table", { class: "list", id: "events" },
    el("thead", {}, el("tr", {}, ["ID", "Type", "Time", "Details"].map((h) => el("th", {}, h)))),
    el("tbody", {}, events.map((event) =>
      el("tr", {}, el("td", {}, event.id), el("td", {}, event.type), el("td", {}, shortTime(event.timestamp)), el("td", {}, jsonBlock(event.details))))));
}

// -- idempotency records ----------------------------------------------------------------------
function plain(value) {
  const [type, inner] = Object.entries(value)[0];
  if (type === "M") return Object.fromEntries(Object.entries(inner).map(([k, v]) => [k, plain(v)]));
  if (type === "L") return inner.map(plain);
  if (type === "N") return Number(inner);
  if (type === "NULL") return null;
  return inner;
}

function countdown(deadlineMs) {
  const cell = el("td", { class: "countdown", "data-deadline": deadlineMs });
  tick(cell);
  return cell;
}

// 3725 -> "1 h 2 min", 125 -> "2 min 5 s", 42 -> "42 s"
function span(seconds) {
  const [h, m, s] = [Math.floor(seconds / 3600), Math.floor((seconds % 3600) / 60), seconds % 60];
  if (h) return `${h} h ${m} min`;
  return m ? `${m} min ${s} s` : `${s} s`;
}

function tick(cell) {
  const seconds = Math.round((Number(cell.dataset.deadline) - Date.now()) / 1000);
  cell.textContent = seconds >= 0 ? `in ${span(seconds)}` : `${span(-seconds)} ago`;
  cell.classList.toggle("past", seconds < 0);
}

function ownerCell(owner) {
  if (typeof owner !== "string") return el("td", {}, "—");
  const execution = owner.split("#")[0];
  return el("td", {}, execution.startsWith("arn:") ? link(route("execution", { arn: execution }), execution.split(":").pop(), { title: owner }) : owner);
}

async function recordsView(params) {
  const tables = await allPages(call, "dynamodb", "ListTables", {}, "TableNames", "LastEvaluatedTableName");
  const table = params.get("table") || tables.find((t) => t.toLowerCase().includes("idempotency")) || tables[0];
  const picker = el("select", { id: "table-picker", on: { change: () => { location.hash = route("records", { table: picker.value }); } } },
    tables.map((t) => el("option", { value: t, selected: t === table }, t)));
  const body = el("div", { id: "records-body" });
  fill(main, el("h1", {}, "Idempotency records"), el("div", { class: "toolbar" }, el("label", {}, "Table ", picker)), body);
  if (!table) {
    fill(body, el("p", {}, "No table on this endpoint."));
    return;
  }
  const starts = params.get("starts") ? JSON.parse(params.get("starts")) : [];
  async function refresh() {
    const request = { TableName: table, Limit: RECORDS_PAGE_SIZE, ConsistentRead: true };
    if (starts.length) request.ExclusiveStartKey = starts[starts.length - 1];
    const page = await call("dynamodb", "Scan", request);
    const items = (page.Items || []).map((item) => Object.fromEntries(Object.entries(item).map(([k, v]) => [k, plain(v)])));
    const more = page.LastEvaluatedKey ? link(route("records", { table, starts: JSON.stringify([...starts, page.LastEvaluatedKey]) }), "More →", { id: "more" }) : null;
    fill(body, recordsTable(table, items), more);
  }
  await refresh();
  every(REFRESH_MS, () => refresh().catch(showError));
  every(COUNTDOWN_MS, () => document.querySelectorAll("[data-deadline]").forEach(tick));
}

function recordsTable(table, items) {
  return el("table", { class: "list", id: "records" },
    el("thead", {}, el("tr", {}, ["Key", "Status", "Owner execution", "Lease ends", "Expires", "Stored result", actionsOn ? "" : null].filter((h) => h !== null).map((h) => el("th", {}, h)))),
    el("tbody", {}, items.map((item) =>
      el("tr", { "data-key": item.id, "data-status": item.status },
        el("td", {}, el("code", {}, item.id)),
        el("td", {}, status(item.status)),
        ownerCell(item.owner),
        // A lease matters only while the record is in progress (Powertools keeps it after).
        item.status === "INPROGRESS" && item.in_progress_expiration !== undefined ? countdown(item.in_progress_expiration) : el("td", {}, "—"),
        item.expiration !== undefined ? countdown(item.expiration * 1000) : el("td", {}, "—"),
        el("td", {}, jsonBlock(item.data)),
        actionsOn ? el("td", {}, forgetButton(table, item.id)) : null))));
}

function forgetButton(table, key) {
  const box = el("span", { class: "forget" });
  const ask = el("button", { type: "button", class: "forget-ask", on: { click: () => fill(box, question) } }, "Forget");
  const question = el("span", { class: "confirm" }, "Forget this record? ",
    el("button", { type: "button", class: "forget-confirm", on: { click: async () => {
      try {
        await call("dynamodb", "DeleteItem", { TableName: table, Key: { id: { S: key } } });
        box.closest("tr").remove();
      } catch (error) { showError(error); }
    } } }, "Yes, forget it"),
    el("button", { type: "button", class: "forget-cancel", on: { click: () => fill(box, ask) } }, "Cancel"));
  box.append(ask);
  return box;
}

// -- function errors: what each function's runtime wrote to its CloudWatch Logs group ----------
// The engine writes a function's invocations there, its errors included, whoever invoked it (a
// trigger has no caller to tell), as Lambda does; this is where AWS's console sends one to look.
const FUNCTION_LOG_PREFIX = "/aws/lambda/";
const FUNCTION_ERRORS_SHOWN = 50;
// The runtime's record of an error: Python's "[ERROR] Type: message", Node.js's "Invoke Error".
const RUNTIME_ERROR = /^\[ERROR\] |\tInvoke Error \t/;

// The record's headline: a Python runtime's "[ERROR] Type: message" line, a Node.js runtime's
// "Invoke Error" JSON as "Type: message".
function errorHeadline(message) {
  const invokeError = message.match(/Invoke Error \t(\{.*\})\s*$/s);
  if (invokeError) {
    try {
      const error = JSON.parse(invokeError[1]);
      return `${error.errorType}: ${error.errorMessage}`;
    } catch { /* not the runtime's JSON: its first line below */ }
  }
  return message.split("\n")[0].replace(/^\[ERROR\] /, "");
}

async function functionErrors() {
  const groups = await allPages(call, "logs", "DescribeLogGroups", { logGroupNamePrefix: FUNCTION_LOG_PREFIX }, "logGroups");
  const perGroup = await Promise.all(groups.map(async (group) => {
    // FilterLogEvents answers oldest first: a group is read whole, and its newest errors kept
    // (the group holds every invocation's log: START, what the function printed, END, REPORT).
    const events = await allPages(call, "logs", "FilterLogEvents", { logGroupName: group.logGroupName }, "events");
    return events.filter((event) => RUNTIME_ERROR.test(event.message)).slice(-FUNCTION_ERRORS_SHOWN).map((event) => ({ ...event, fn: group.logGroupName.slice(FUNCTION_LOG_PREFIX.length) }));
  }));
  return perGroup.flat().sort((a, b) => b.timestamp - a.timestamp);
}

async function functionsView() {
  const box = el("div", { id: "function-errors" });
  fill(main,
    el("h1", {}, "Function errors"),
    el("p", { class: "facts" }, `The newest ${FUNCTION_ERRORS_SHOWN} errors of each function, from its CloudWatch Logs group `, el("code", {}, `${FUNCTION_LOG_PREFIX}<name>`), ", whoever invoked it."),
    box);
  async function refresh() {
    const errors = await functionErrors();
    fill(box, errors.length === 0 ? el("p", {}, "No function has failed.") :
      el("table", { class: "list", id: "function-error-list" },
        el("thead", {}, el("tr", {}, el("th", {}, "Time"), el("th", {}, "Function"), el("th", {}, "Error"))),
        el("tbody", {}, errors.map((e) =>
          el("tr", { "data-function": e.fn },
            el("td", {}, shortTime(e.timestamp / 1000)),
            el("td", {}, e.fn),
            el("td", {}, el("details", {}, el("summary", {}, errorHeadline(e.message)), el("pre", {}, e.message))))))));
  }
  await refresh();
  every(REFRESH_MS, () => refresh().catch(showError));
}

// -- routing ----------------------------------------------------------------------------------
const VIEWS = { "": machinesView, machine: machineView, execution: executionView, records: recordsView, functions: functionsView };

async function show() {
  timers.forEach(clearInterval);
  timers = [];
  document.getElementById("error").hidden = true;
  const [view, query] = location.hash.replace(/^#\/?/, "").split("?");
  main.setAttribute("aria-busy", "true");
  try {
    await (VIEWS[view] || machinesView)(new URLSearchParams(query || ""));
  } catch (error) {
    showError(error);
  } finally {
    main.setAttribute("aria-busy", "false");
  }
}

document.getElementById("actions-state").textContent = actionsOn ? "actions on" : "read-only";
window.addEventListener("hashchange", show);
show();
