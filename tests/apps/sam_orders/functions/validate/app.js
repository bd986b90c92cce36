// CommonJS, a callback handler (nodejs22.x still takes them), with a package from its layer.
const { isValid } = require("order-rules");

exports.lambdaHandler = (event, context, callback) => {
  if (!isValid(event)) {
    const error = new Error(`order ${JSON.stringify(event)} has no orderId or items`);
    error.name = "InvalidOrder";
    callback(error);
    return;
  }
  callback(null, { ...event, validatedBy: context.functionName, stage: process.env.STAGE });
};
