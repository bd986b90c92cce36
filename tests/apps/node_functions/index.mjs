// ES module handlers for the engine's Node.js runtime tests.
let calls = 0;

export const context = async (event, context) => {
  calls += 1;
  return {
    event,
    calls,
    functionName: context.functionName,
    functionVersion: context.functionVersion,
    invokedFunctionArn: context.invokedFunctionArn,
    memoryLimitInMB: context.memoryLimitInMB,
    awsRequestId: context.awsRequestId,
    logGroupName: context.logGroupName,
    remaining: context.getRemainingTimeInMillis(),
    greeting: process.env.GREETING,
    region: process.env.AWS_REGION,
    node: process.version,
  };
};

export const fails = async () => {
  class PaymentDeclined extends Error {
    constructor(message) {
      super(message);
      this.name = "PaymentDeclined";
    }
  }
  throw new PaymentDeclined("card 4242 declined");
};

export const slow = async (event) => new Promise((resolve) => setTimeout(() => resolve(event), 10_000));

export const exits = async () => process.exit(7);

export const callback = (event, context, done) => done(null, { viaCallback: event });

export const logs = async (event, context) => {
  console.log("charging %s", event.orderId, { amount: 5 });
  console.error("declined\nretry later");
  return context.awsRequestId;
};
