// What an execution did, read from its history events (GetExecutionHistory, or the CloudWatch Logs
// records of an Express execution, normalised to the same shape): the states in the order they
// were entered, with input, output, error and cause, and which state failed or caught an error.

const EXECUTION_ENDS = new Set(["ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"]);

// A history event as GetExecutionHistory returns it -> {id, type, timestamp, details}. Its details
// sit in the one member named *EventDetails (every *StateEntered type shares stateEnteredEventDetails).
export function fromApiEvent(event) {
  const key = Object.keys(event).find((name) => name.endsWith("EventDetails"));
  return { id: event.id, type: event.type, timestamp: event.timestamp, details: (key && event[key]) || {} };
}

// A CloudWatch Logs record of Step Functions' log format -> the same shape.
export function fromLogRecord(record) {
  return { id: Number(record.id), type: record.type, timestamp: Number(record.event_timestamp) / 1000, details: record.details || {} };
}

function isFailure(type) {
  return !EXECUTION_ENDS.has(type) && /(Failed|TimedOut)$/.test(type);
}

// {steps, visited, failedState, caughtStates, status, error, cause}
export function pathOf(events) {
  const steps = [];
  const open = []; // steps entered and not yet exited, innermost last
  let ending = null;
  let lastExited = null; // the state the next one entered came from
  for (const event of events) {
    const details = event.details;
    if (event.type.endsWith("StateEntered")) {
      const step = { name: details.name, input: details.input, output: undefined, error: undefined, cause: undefined, exited: false, entered: event.timestamp, previous: lastExited };
      steps.push(step);
      open.push(step);
    } else if (event.type.endsWith("StateExited")) {
      const index = open.map((s) => s.name).lastIndexOf(details.name);
      if (index >= 0) {
        const [step] = open.splice(index, 1);
        step.exited = true;
        step.output = details.output;
        lastExited = step.name;
      }
    } else if (isFailure(event.type) && open.length) {
      const step = open[open.length - 1];
      step.error = details.error;
      step.cause = details.cause;
    } else if (EXECUTION_ENDS.has(event.type)) {
      ending = { type: event.type, error: details.error, cause: details.cause };
    }
  }
  const failed = ending && ending.type !== "ExecutionSucceeded";
  // The failed state: the innermost one still open when the execution ended, else the last entered.
  const failedStep = failed ? open[open.length - 1] || steps[steps.length - 1] : null;
  if (failedStep && failedStep.error === undefined) {
    failedStep.error = ending.error;
    failedStep.cause = ending.cause;
  }
  for (const step of steps) {
    step.status = step === failedStep ? "failed" : step.error !== undefined ? "caught" : step.exited ? "succeeded" : "running";
  }
  return {
    steps,
    visited: new Set(steps.map((s) => s.name)),
    failedState: failedStep ? failedStep.name : null,
    caughtStates: new Set(steps.filter((s) => s.status === "caught").map((s) => s.name)),
    taken: new Set(steps.filter((s) => s.previous).map((s) => `${s.previous}\u0000${s.name}`)),
    ending,
  };
}
