// An ES module, an async handler; `priced` counts the invocations this environment served.
let priced = 0;

export const handler = async (event, context) => {
  priced += 1;
  const total = event.items.reduce((sum, item) => sum + item.price * item.quantity, 0);
  return {
    ...event,
    total,
    pricedInWarmEnvironment: priced,
    remainingMillisPositive: context.getRemainingTimeInMillis() > 0,
    memory: context.memoryLimitInMB,
  };
};
