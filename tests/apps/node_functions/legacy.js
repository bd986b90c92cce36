// CommonJS, a callback handler and a plain one.
exports.callback = function (event, context, callback) {
  setTimeout(() => callback(null, { viaCallback: event, name: context.functionName }), 5);
};

exports.callbackError = function (event, context, callback) {
  callback(new TypeError("no such order"));
};
