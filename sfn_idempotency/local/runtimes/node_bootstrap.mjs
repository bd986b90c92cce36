// The engine's Node.js runtime: one warm execution environment of one function, as Lambda keeps
// one per concurrent invocation. It loads the handler once (CommonJS or an ES module), then reads
// one invocation per line on stdin and writes one answer per line to the result pipe (fd given in
// SFN_LOCAL_RESULT_FD), so that what the function prints (stdout, stderr) stays its log.
//
// An answer is {"payload": <JSON text>} or {"error": {errorType, errorMessage, trace}}, as
// Lambda's Node.js runtime reports an error.
import { existsSync, writeSync } from "node:fs";
import { createRequire, registerHooks } from "node:module";
import path from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { format } from "node:util";

const taskRoot = process.env.LAMBDA_TASK_ROOT;
const handlerSetting = process.env._HANDLER ?? "";
const resultFd = Number(process.env.SFN_LOCAL_RESULT_FD);
const declaredMajor = Number(process.env.SFN_LOCAL_DECLARED_NODE_MAJOR ?? "0");
// Lambda removed callback handlers from nodejs24.x on (aws-lambda-nodejs-runtime-interface-client 4).
const callbacksAllowed = declaredMajor < 24;

// From nodejs18.x on, an ES module's `import` finds the packages of the function's layers and the
// SDK the runtime carries, as `require` finds them through NODE_PATH (which `import` never reads):
// a bare specifier the function's own folders lack is looked for in each NODE_PATH folder, in order.
// nodejs16.x and earlier did not (their ES modules had to bring what they import).
if (declaredMajor >= 18 && typeof registerHooks === "function") {
  const folders = (process.env.NODE_PATH ?? "").split(path.delimiter).filter(Boolean);
  registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context);
      } catch (error) {
        const bare = !/^(?:[./]|[a-z][a-z0-9+.-]*:)/i.test(specifier);
        if (error?.code !== "ERR_MODULE_NOT_FOUND" || !bare) {
          throw error;
        }
        for (const folder of folders) {
          // As if imported by a module in that node_modules folder: walking up, Node looks in it.
          const parentURL = pathToFileURL(path.join(folder, "_")).href;
          try {
            return nextResolve(specifier, { ...context, parentURL });
          } catch {
            // not in this one
          }
        }
        throw error;
      }
    },
  });
}
const CALLBACK_REMOVED =
  "ERROR: AWS Lambda has removed support for callback-based function handlers starting with " +
  "Node.js 24. You need to modify this function to use a supported handler signature to use " +
  "Node.js 24 or later. For more information see " +
  "https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html.";

class RuntimeError extends Error {
  constructor(name, message) {
    super(message);
    this.name = name;
  }
}

// The console writes as Lambda's Node.js runtime does in its text log format: time, request id
// ("undefined" while the module loads), level, then the message.
let currentRequestId;
const LEVELS = { log: "INFO", info: "INFO", warn: "WARN", error: "ERROR", debug: "DEBUG", trace: "TRACE" };
for (const [method, level] of Object.entries(LEVELS)) {
  console[method] = (...args) => {
    process.stdout.write(`${new Date().toISOString()}\t${currentRequestId}\t${level}\t${format(...args)}\n`);
  };
}

// What ends an invocation's log: the engine reads up to it before it answers (a pipe to stdout
// is written synchronously, so everything printed before it is in the pipe).
const END_OF_LOG = process.env.SFN_LOCAL_END_OF_LOG;

function answer(value) {
  if (currentRequestId !== undefined) {
    process.stdout.write(`${END_OF_LOG}${currentRequestId}\n`);
  }
  writeSync(resultFd, JSON.stringify(value) + "\n");
}

// The function's frames, under the folder AWS unpacks the code to; not this bootstrap's or Node's.
const taskUrl = pathToFileURL(taskRoot ?? ".").href;
function traceOf(error) {
  return String(error.stack ?? "")
    .split("\n")
    .filter((line) => !line.includes(import.meta.url) && !line.includes("(node:internal"))
    .map((line) => line.replaceAll(taskUrl, "file:///var/task").replaceAll(taskRoot, "/var/task"));
}

function errorOf(error) {
  if (error instanceof Error) {
    return { errorType: error.name, errorMessage: error.message, trace: traceOf(error) };
  }
  // A thrown or passed non-Error: the runtime names its type, and its text is the message.
  const message = typeof error === "string" ? error : JSON.stringify(error);
  return { errorType: typeof error, errorMessage: message, trace: [] };
}

// The AWS SDK v2 (aws-sdk, which nodejs16.x and older carry) reads no AWS_ENDPOINT_URL, which v3
// reads itself: its clients are pointed at the engine here, before the handler loads, so that its
// calls reach the engine as v3's do, never AWS. Resolved as the handler's own require resolves it.
function pointSdkV2AtTheEngine() {
  const endpoint = process.env.AWS_ENDPOINT_URL;
  if (!endpoint) {
    return;
  }
  const require = createRequire(path.join(taskRoot ?? ".", "index.js"));
  try {
    require.resolve("aws-sdk");
  } catch {
    return; // the function neither packages it nor names it
  }
  const AWS = require("aws-sdk");
  AWS.config.update({ endpoint, s3ForcePathStyle: true });
  // v2 sends an SQS call to its QueueUrl's host (sqs.<region>.amazonaws.com, as the engine's
  // queues are named) rather than to the configured endpoint: it goes to the engine too, and the
  // queue is still found by its URL, which the call carries.
  const buildEndpoint = AWS.SQS?.prototype?.buildEndpoint;
  if (typeof buildEndpoint === "function") {
    AWS.SQS.prototype.buildEndpoint = function (request) {
      buildEndpoint.call(this, request);
      if (request.httpRequest.params?.QueueUrl) {
        request.httpRequest.endpoint = new AWS.Endpoint(endpoint);
      }
    };
  }
}

// `src/app.lambdaHandler`: the module `src/app` (.js, .mjs or .cjs) and its export `lambdaHandler`.
async function loadHandler() {
  const dot = handlerSetting.lastIndexOf(".");
  if (dot < 1) {
    throw new RuntimeError("Runtime.MalformedHandlerName", "Bad handler");
  }
  const modulePath = handlerSetting.slice(0, dot);
  const exportName = handlerSetting.slice(dot + 1);
  const file = [".js", ".mjs", ".cjs"]
    .map((extension) => path.resolve(taskRoot, modulePath + extension))
    .find((candidate) => existsSync(candidate));
  if (file === undefined) {
    throw new RuntimeError(
      "Runtime.ImportModuleError",
      `Error: Cannot find module '${modulePath}'`,
    );
  }
  let loaded;
  try {
    loaded = await import(pathToFileURL(file).href);
  } catch (error) {
    // As Lambda's runtime names a failed load: a syntax error, or a module that cannot be imported.
    const name = error instanceof SyntaxError ? "Runtime.UserCodeSyntaxError" : "Runtime.ImportModuleError";
    throw new RuntimeError(name, `${error.name}: ${error.message}`);
  }
  const handler = loaded[exportName] ?? loaded.default?.[exportName];
  if (typeof handler !== "function") {
    throw new RuntimeError(
      "Runtime.HandlerNotFound",
      `${modulePath}.${exportName} is undefined or not exported`,
    );
  }
  return handler;
}

function contextFor(request) {
  const deadline = request.deadlineMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: request.functionName,
    functionVersion: request.functionVersion,
    invokedFunctionArn: request.invokedFunctionArn,
    memoryLimitInMB: String(request.memoryLimitInMB),
    awsRequestId: request.requestId,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
}

function invoke(handler, event, context) {
  if (handler.length >= 3 && !callbacksAllowed) {
    return Promise.reject(new RuntimeError("Runtime.CallbackHandlerDeprecated", CALLBACK_REMOVED));
  }
  return new Promise((resolve, reject) => {
    const callback = (error, result) => (error ? reject(error) : resolve(result));
    let returned;
    try {
      returned = handler(event, context, callback);
    } catch (error) {
      reject(error);
      return;
    }
    if (returned && typeof returned.then === "function") {
      returned.then(resolve, reject);
    } else if (handler.length < 3) {
      resolve(returned); // neither async nor a callback handler: what it returned
    }
  });
}

function serialized(result) {
  try {
    return JSON.stringify(result === undefined ? null : result);
  } catch {
    throw new RuntimeError("Runtime.JSONStringifyError", "Unable to stringify response body");
  }
}

async function main() {
  let handler;
  let loadError;
  try {
    pointSdkV2AtTheEngine();
    handler = await loadHandler();
  } catch (error) {
    loadError = errorOf(error);
  }
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    const request = JSON.parse(line);
    currentRequestId = request.requestId;
    if (loadError !== undefined) {
      answer({ error: loadError });
      continue;
    }
    try {
      const result = await invoke(handler, request.event, contextFor(request));
      answer({ payload: serialized(result) });
    } catch (error) {
      answer({ error: errorOf(error) });
    }
  }
}

process.on("unhandledRejection", (reason) => {
  console.error("Unhandled Promise Rejection", reason);
  process.exit(128);
});

await main();
