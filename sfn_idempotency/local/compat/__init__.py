"""Small, isolated fixes to moto, so that the local engine answers as AWS does. One module per AWS
surface, each with the guarded patches (``PATCHES``) of the moto internals it touches. Each fix has
a test in tests/local and names its row of the AWS fidelity ledger, docs/aws-fidelity.md (`[L7]` is
`#l7` there; speed fixes change no behaviour).

The fixes know moto, and what lies below them (``runtimes``, ``documents``,
``stepfunctions_jsonata``), never what stands on them: what a fix needs from above (the engine's
call hooks, its program store, its faults) it is given through a seam the engine wires up
(``engine/patches.py``, which also holds the one table of every patch, in the order they compose,
checked before anything is patched).

Four capabilities live in ``local/capabilities/`` and keep their fix numbers here: TestState, HTTP
Tasks, versions and aliases, the Distributed Map. Their patches stay in the engine's one table
because they wrap attributes other fixes wrap too (a Task's ``_from_error``, StartExecution,
DescribeExecution), and only patches of one table compose, in its order.

interpreter (moto's ASL interpreter)
  1. [speed] Task clients: one cached boto3 client per service and region, from a session that
     carries our call hooks (Lambda Invoke reaches our handlers, faults can be injected).
  2. [L10] Retry waits may be scaled for tests; which errors retry, and how often, is untouched.
  9. [speed] Each definition is parsed once and the parsed program shared by its executions and by
     every check of it (heap keys drawn at parse time, so concurrent executions cannot race on them).
  10. [L9] ``States.ALL`` does not catch ``States.Runtime``, as documented. (Narrowed: it used to
      spare ``States.DataLimitExceeded`` too, which AWS recordings show ``States.ALL`` catching.)
  145. [L9] A state's data is held to 256 KiB counted in the UTF-8 bytes of its compact JSON text
       (moto counted Python's padded, ASCII-escaped text: six bytes for an é).
  11. [speed] Each distinct JSONPath is parsed once (jsonpath-ng builds a parser per parse).
  16. [L16] Each parse has its own QueryLanguage scopes (moto shared one stack across parses), and
      a JSONPath state inside a JSONata Map of a JSONPath machine is accepted (recorded).
  26. [L22] An ``Assign`` string literal is a JSON string (moto kept its escapes), and a state's
      ``assignedVariables`` are JSON text.
  27. [L22] ``$$.Execution.StartTime`` and ``$$.State.EnteredTime`` are written as AWS writes them;
      a state's entry time is read from ``state_clock``, which a LocalCloud moves with its clock.
  87. [L5] A Fail state's ``Error`` (or ``ErrorPath``) and a function's ``errorType`` may begin with
      ``States.``, as public apps AWS deployed have them (moto refused the name).
  98. [L46] A Map's input that is not an array is written as compact JSON in the cause, as
      recorded (moto wrote its Python type, ``<class 'dict'>``).
  135. [L47] A Choice state without a Default whose rules all fail ends as ``States.NoChoiceMatched``
       (moto: ``States.Runtime``, a RuntimeError's repr as the cause).
  140. [L48] A runtime error raised in a Parallel branch or a Map iteration ends the execution with
       the cause its state wrote, naming that state once (moto named each enclosing state again).
  141. [L4] An intrinsic function's path argument may chain brackets (``$['a']['b']``; moto's lexer
       stopped at the second, printed a token error, and read ``$['a']``).

evaluation (how the interpreter evaluates)
  59. [speed] A program without TimeoutSeconds (a Map iteration, a Parallel branch, most
      machines) runs in its caller's thread, not one of its own that the caller joined.
  63. [speed] So does the work of a Task without TimeoutSeconds or a heartbeat.
  65. [speed] A running or ended program's state (names only) is copied attribute by attribute,
      not by ``deepcopy``'s generic walk, at every state and every Map iteration's frame.
  66. [speed] A history event's timestamp is written from tables of its fields' texts, not by
      ``strftime``.
  84. [speed] moto's list of every thread its interpreter started keeps the live ones only (it
      kept every ended thread, and what it held, for the life of the process).
  85. [speed] A workflow's JSON values are deep-copied by a walk that knows dicts and lists, not
      by ``copy.deepcopy``'s generic one.
  110. [speed] A component's text (a walk of its whole tree) is written only when it is read: a
       Parallel branch's thread is named without it, a failure's ERROR line only for a logger that
       takes it.
  116. [speed] A Map's gathered results are copied by fix 85's walk, not ``copy.deepcopy``.
  121. [speed] A frame (a Map iteration's, a Parallel branch's) is built with its opener's event
      manager, callback pool and Map run pool, which moto made anew only to replace them.
  126. [speed] A frame's State context and a program's state are copied by fix 85's walk and fix
       65's copy, not ``copy.deepcopy``'s generic walk, at every frame and every look.
  129. [speed] A state's input is written into its entered and exited events as it is, not from
       a deep copy made for each (a third of an execution's copies).

moto_core (moto's plumbing, under every service)
  57. [speed] A service's backend for an account already there is looked up without moto's
      global lock (moto took it, and searched its registry, at every look-up).
  81. [speed] ``moto.batch`` (and EC2 with it) loads at the first Batch request, not when the
      interpreter is imported.
  111. [speed] moto's server lists its own modules once (it listed its package's folder, and
       asked the file system about each entry, at every request).
  122. [speed] An answer's members find their attributes through aliases each shape keeps (moto
       asked six alias providers, and converted each alias, for every member of every answer).
  124. [speed] Each action name's method name is converted once, not by regular expressions at
       every request.
  127. [speed] In process, each URL's service is found once (moto's stub matched it against up
       to 183 services' patterns at every call), and an answered request drops werkzeug's
       reference to itself (a cycle per call, left to the garbage collector).
  128. [speed] A random text (a request id) is drawn in one loop, character by character as
       ``random.choice`` draws them: the same texts from the same seed.
  133. [speed] A request's root URL is built once per scheme, host and mount point (werkzeug
       quoted it and turned it into an IRI at every request).
  143. [speed] Each start of moto's mock registers the ``requests`` responses of its URL patterns
       built once per process (it built 1,288 of them at every start).
  97. [L46] An action moto has not implemented is an HTTP 501 ``NotImplemented`` answer in the
      service's protocol (moto raised out of the request: a traceback, a KeyError as the cause).
  149. [L19] A JSON service's request whose body is not a JSON object of its members' kinds is
       refused 400 ``SerializationException`` in AWS's words (moto failed on it: HTTP 500, HTML).
  150. [L19] An exception escaping a service's handling of a served request is 500
       ``InternalFailure`` in the service's protocol and one log line (werkzeug: an HTML page).

moto_server (moto's HTTP server, which ``serve`` runs)
  112. [speed] Connections are kept between requests whose bodies are framed by their length
       (werkzeug closed every one, and its drain would have read the next request).
  113. [speed] A plain header block becomes its ``HTTPMessage`` without the email package's parser.
  114. [speed] Each host's service is matched once, not against every URL pattern per request.
  115. [speed] An execution a request starts begins once the request is answered.
  123. [speed] werkzeug's access-log line is written only for a logger that takes it.
  125. [speed] Flask's debug class for a request's files is built only for a request with form
       fields (the only one whose error it words differently).
  131. [speed] An SDK's request to a JSON service (X-Amz-Target, no Origin) is answered by the view
       its path matched, without Flask's request machinery, with the headers moto's CORS adds.
  134. [speed] A request without an underscore in a header name skips moto's search for S3
       metadata names to keep (it built every header's WSGI name at every request).
  144. [L19] A browser's CORS preflight is answered 200 with the CORS headers, as AWS's endpoints
       answer one (it names no service: moto gave it to S3's bucket listing, which moto 5.2.6
       fails with an AssertionError, HTTP 500).
  154. [L19] A request to ``/`` other than a read that names no service (unsigned, no target, no
       action) is answered 403 ``MissingAuthenticationToken`` (moto: S3's listing, HTTP 500).

execution_ends (an execution's end)
  56. [speed] Every execution's end is announced: a ``.sync``/``.sync:2`` parent's pause between
      two looks at its child ends then (moto slept 0.5 s), and so does ``LocalCloud.wait``.
  68. [L41] StopExecution and an execution's TimeoutSeconds end it at once: status, terminal event
      and status-change event (moto: when the running state returned); the history takes nothing
      after its first terminal event, so a running Task's late answer is dropped; an ended status
      is written after the output, error and cause it goes with.
  83. [speed] The history of an execution that SUCCEEDED is packed (compressed) once it ended.
  109. [speed] So is its run: a slim record of what its readers use (history, map runs, callbacks)
       replaces its worker, whose states' data, variables and locks are let go.

history (an execution's history events)
  74. [L44] An ``EvaluationFailed`` event follows what its state's entered event followed, and a
      Distributed Map's ``MapStateExited`` follows its ``MapRunStarted`` (recorded; moto linked
      each to the last event before it); a runtime error's cause names its state's entered event.
  147. [L49] A cause is cut to its first 32,768 characters, the most Step Functions' API holds, in
       every history event and in the execution's own cause (moto kept a cause whole).
  153. [L12] A value that is still the execution's input is written as the text it was sent as,
       in the history, the output and DescribeExecution; a Distributed Map is entered with it
       written again, compact (moto wrote every value again, compact).

execution_lookups (finding and listing a machine's executions)
  82. [speed] DescribeExecution, GetExecutionHistory and ListExecutions find an execution through
      an index of ARNs, and read a page backwards from the newest execution or the token's (moto
      walked and sorted every execution the machine ever had, at every call). A token's unique
      attributes are a list from moto 5.2.6, joined with ``|`` before.
  120. [speed] A start by name looks for a namesake in the same index, and only a name in use goes
      to moto's walk of the machine's executions (which grew with every named start before it).

answers (the Step Functions API)
  3. [L12] Execution output is JSON text, always (moto unquoted strings and dropped null).
  5. [L12] An execution started without a name gets a fresh UUID (moto named it "None").
  12. [speed] Response methods are listed once per class; interpreter requests go unsigned.
  64. [speed] An execution whose name fix 5 drew is not looked for among its machine's others.
  72. [L19] DescribeMapRun and UpdateMapRun of an unknown map run answer ResourceNotFound naming
      it (moto failed to build the error: HTTP 500).
  75. [L19] A state machine, execution or activity ARN that is not an ARN is "Invalid Arn:
      'Invalid ARN prefix: …'" (recorded).
  105. [L19] An execution input that is not JSON is refused in AWS's words, Jackson's (moto's
      were Python's), and so is NaN or Infinity, which Jackson does not read (moto took them).
  151. [L12] An execution's name is held to the rules of every Step Functions name (``Invalid
       Name: '<name>'``; moto's parser backend started an execution under any name).
  14. [L14] StartSyncExecution runs an Express workflow within the request; Standard is refused;
      the answer has ``billingDetails`` (duration rounded up to 100 ms, 64 MB).
  17. [L17] CreateStateMachine under a taken name returns the machine only for the same request.
  18. [L19] Errors carry their AWS code (moto 5.2.5's parser API sent ``{"__type": null}``: no SDK
      could raise InvalidDefinition, InvalidExecutionInput...; 5.2.6 sends the code, and the fix
      leaves its errors alone).
  19. [L19] Answers as recorded: DescribeStateMachine's logging default and ``revisionId``;
      UpdateStateMachine's ``revisionId`` and its refusal of an empty update; DescribeExecution's
      ``inputDetails``; StopExecution's ``stopDate``, ``error`` and ``cause``; DescribeStateMachineForExecution's
      ``updateDate``; GetExecutionHistory's ``reverseOrder`` and paging.
  20. [L19] An operation the engine does not implement answers JSON (UnknownOperationException),
      never an HTML page (moto 5.2.5) or an empty 404 (5.2.6, for an operation its model lacks).
  21. [L19] Requests are checked against the API's ranges, lengths, enums and patterns, nested
      members included (ValidationException, answered as moto answers its actions' errors: from
      5.2.6 one raised before the action is no HTTP exception, and would escape as a 500).
  45. [L35] DescribeStateMachine and DescribeStateMachineForExecution list each state's
      ``variableReferences``, from moto's own analyser of the definition (once per definition).

definitions (CreateStateMachine, UpdateStateMachine and ValidateStateMachineDefinition alike)
  28. [L23] One set of checks answers all three, as AWS words them: required fields, transitions to
      states that do not exist (moto accepted them), a JSONPath state under a JSONata machine,
      ``.sync`` and ``.waitForTaskToken`` in an Express machine (moto accepted them), a Wait's
      literal Timestamp that is not RFC 3339, a Task resource nobody integrates; then moto's
      parser. ValidateStateMachineDefinition answers ``result``, ``diagnostics`` and ``truncated``.

test_state (the TestState API; a capability: ``local/capabilities/test_state/``)
  29. [L24] TestState runs one state on moto's interpreter (moto's own TestState program) with the
      request's input, variables, context and mock, and answers output, error, cause, nextState,
      status (SUCCEEDED, FAILED, RETRIABLE, CAUGHT_ERROR) and inspectionData; ``stateName`` picks a
      state of a whole definition; a mock is checked against the integration's answer schema.

integrations (what a Task's call sends and returns)
  6. [L3] ``states:startExecution`` (and ``.sync``/``.sync:2``) speak the API's PascalCase.
  23. [L21] aws-sdk errors name the service as the SDK for Java does (``S3.NoSuchKeyException``).
  24. [L21] aws-sdk requests and results go through the API model (capitalized members, blob
      bodies as JSON text, streamed bodies as text).
  138. [L21] The structures in a map an aws-sdk API takes or answers are spelled with capitals too
       (moto stopped at maps: botocore failed with a KeyError's text, ``'ActionId'``).
  25. [L21] S3 answers say SSE-S3 and carry an extended request id; DynamoDB answers carry no
      ConsumedCapacity unless asked; checksums sent where supported, none asked back.
  55. [L7] A PutEvents Task's ``EventBridge.FailedEntry`` Cause is the answer as JSON text.
  70. [L43] An optimized integration's result carries the SDK's ``SdkHttpMetadata`` and
      ``SdkResponseMetadata`` (headers, status and request id of the service's answer, as recorded).
  71. [L43] A ResultSelector path missing from a service Task's answer fails the state with
      ``States.Runtime`` (moto named it after the service, after TaskSucceeded).
  73. [L43] The error Cause of a Task whose Resource is a Lambda function is its error payload as
      the function's runtime wrote it (``lambda:invoke``'s stays compact JSON, as recorded).
  148. [L20] A function's answer that is not JSON text as Step Functions reads it (a Python
       function's ``NaN``) is the string it holds (moto read ``NaN`` as a number no JSON holds).
  76. [L21] An aws-sdk S3 PutObject of a body given in the state, with no ContentType, stores it
      as ``text/plain; charset=UTF-8``, as the SDK for Java sends text.
  77. [L21] An aws-sdk Task's error Cause ends with the SDK's "(SDK Attempt Count: 1)" (recorded
      since November 2025).
  95. [L46] A Batch Task speaks the API's PascalCase (moto sent ``JobName`` to a camelCase API).
  102. [L1] An optimized integration's refusal is named as the SDK for Java names it: the modelled
      exception class, else the service's generic one (``DynamoDB.AmazonDynamoDBException``), the
      code in the cause (moto said ``DynamoDB.<code>``, and SQS ``SdkClientException`` for all).
  99. [L46] A DynamoDB Task whose parameters cannot be its request (a plain string as an Item
      attribute) fails as ``States.Runtime`` in AWS's words (moto's cause was Python's).

service_tasks (Tasks of services moto's interpreter half-ran)
  93. [L46] An ``apigateway:invoke`` Task reaches the engine's own REST API stage, with every
      documented parameter (moto kept two, called the network, and failed with a TypeError).
  96. [L46] Athena and SageMaker ``.sync`` Tasks wait for their job; any other ``.sync`` moto
      lacks fails as ``States.Runtime`` naming it (moto answered a RuntimeError's text).
  108. [L46] ``bedrock:invokeModel`` calls Bedrock Runtime's InvokeModel, its body JSON both ways
      (moto called Bedrock's control plane and failed with an AttributeError's text); an action the
      service's SDK lacks fails as ``States.Runtime`` naming it.
  136. [L46] An ``apigateway:invoke`` GET (DELETE, HEAD, OPTIONS) with a ``RequestBody`` is made
       without the body (moto raised a bare ValueError: ``ApiGateway.ValueError``, no cause).

json_paths (a JSONPath that selects nothing)
  94. [L46] A parameter's missing path names its own field (moto named the caller's last,
      ``TimeoutSeconds``); InputPath, OutputPath and the timeout paths word it as Jayway does.
  160. [L46] A JSONPath Assign entry's missing path names its field as written (``name.$``), not a
       class of moto's.

services (moto's S3 and SNS, for every caller)
  25. [L21] Objects are encrypted with SSE-S3 by default and their answers say so; an object
      stored with a checksum has ChecksumType FULL_OBJECT.
  31. [L21] A FIFO topic refuses a message without MessageGroupId with AWS's InvalidParameter,
      and Publish to it answers a SequenceNumber.
  32. [L21] A secret's name with a character AWS does not allow is refused (ValidationException).
  52. [L21] An SNS notification is signed as its topic asks: SHA1 and ``SignatureVersion`` 1 unless
      the topic's ``SignatureVersion`` is 2 (moto always said 2), its Subject included.
  103. [L1] SQS SendMessage without a body is ``MissingParameter`` (moto failed in Python).
  104. [L1] An SNS Publish succeeds when a subscribed queue does not exist (moto failed the call).
  152. [L21] SNS Publish to a topic that does not exist is ``NotFound``, "Topic does not exist"
       (moto looked for a mobile endpoint of that ARN and said "Endpoint does not exist").
  162. [L31] A Lambda subscription gets SNS's notification as published (moto sent a fixed sample).

http_task (HTTP Tasks; a capability: ``local/capabilities/http_task.py``)
  33. [L26] HTTP Tasks (http:invoke) call their endpoint with the connection's authorization and
      answer as AWS does; a status outside 2xx is States.Http.StatusCode.<code>, which a Retry or
      Catch may name; TestState at TRACE reports the raw request and response.

events (EventBridge)
  7. [L7] A rule whose target is a state machine starts it (moto delivered to SQS and Logs only,
     and through DISABLED rules too), with its Input, InputPath or InputTransformer; one that
     cannot be started drops the event, PutEvents succeeds. A rule without a pattern (a schedule)
     matches no event (moto matched every one).
  13. [L6] Standard executions send "Step Functions Execution Status Change" events.
  53. [L7] An event delivered without an input transformer carries its ``account``.
  54. [L7] PutEvents answers ``MalformedDetail`` for a Detail that is JSON but not an object.
  132. [speed] A status change event that no rule on its bus can take (fix 7's rules that deliver
       nothing, patterns whose plain strings leave out its source, detail type, status or state
       machine) is not put; every other rule still gets it through PutEvents.

lambda_runtime (functions created through the Lambda API)
  22. [L20] Python zips run in process, Node.js zips in a warm local Node process
      (sfn_idempotency.local.runtimes), as AWS's runtimes run them (moto needs Docker): the
      result, or errorMessage/errorType/requestId/stackTrace; bytes as they are; the function's
      environment; ``Sandbox.Timedout`` past its timeout. The answer names ``ExecutedVersion``, and
      an unknown function's Cause its ``$LATEST`` qualifier; the context's ``invoked_function_arn``
      is the ARN it was invoked by, qualifier included. A deleted function's unpacked code
      is removed, and all of it when the cloud closes.
  157. [L20] An SQS event source mapping delivers a batch its function failed again after the
       queue's visibility timeout, until it succeeds or the redrive policy moves it to the
       dead-letter queue (moto invoked once, on send: a failing message never reached the DLQ).
  163. [L20] An SQS event source mapping invokes its function once per batch, each record as SQS
       holds the message, and redelivers only what a partial batch response names (moto: once
       per message, a fixed sample's attributes, every response a success).
  161. [L20] An EventBridge rule's Lambda target and an SNS subscription invoke the function
       asynchronously, a function error tried twice more (moto had no Lambda target: PutEvents
       failed whole).

execution_logs (CloudWatch Logs)
  30. [L25] An execution whose state machine logs to a CloudWatch Logs group writes its history
      events there in Step Functions' log format (moto built no logging session, and its publisher
      could not write to moto's Logs); Express executions are read back from there.
  106. [L25] The records are delivered asynchronously, in batches, by one delivery thread (one
      PutLogEvents per stream and batch, in time order, a batch what was sent in 50 ms), never on
      the execution's path, as AWS delivers them; a read of Logs or of CloudWatch metrics first
      waits for the records sent before it.
  119. [speed] A record without execution data copies its details' top level without the data
       (moto deep-copied the details to pop four keys).

callbacks (activities, and Tasks that wait for a token)
  34. [L27] An activity whose heartbeats stop fails with ``States.HeartbeatTimeout`` (moto: ``States.Timeout``);
      one no worker took times out with ``States.Timeout``.
  35. [L28] CreateActivity under a taken name answers that activity (moto refused it).
  36. [L29] SendTaskFailure carries its cause (moto dropped it).
  37. [L28] A missing activity is named as AWS names it.
  164. [L28] An activity created without an encryption configuration describes AWS's default
       (moto: null).

versions (versions and aliases of a state machine; a capability: ``local/capabilities/versions.py``)
  44. [L34] PublishStateMachineVersion, ListStateMachineVersions (newest first, paged) and
      DeleteStateMachineVersion (refused while an alias routes to the version); nothing changed
      since the latest version publishes none; executions of a version or of an alias (a version
      drawn by its weights) run that version, are the machine's, and name both; an update of an
      alias that is not there is refused in AWS's words.

express (Express executions started with StartExecution)
  46. [L36] An Express execution's ARN is ``…:express:<machine>:<name>:<id>``; DescribeExecution,
      StopExecution, GetExecutionHistory and DescribeStateMachineForExecution refuse it
      (InvalidArn), and ListExecutions of an Express machine is StateMachineTypeNotSupported.

redrive_fields (what every execution says about redrive)
  48. [L38] DescribeExecution answers ``redriveCount``, ``redriveStatus`` (and its reason) and
      ``redriveDate``; ListExecutions' items their ``redriveCount`` and ``redriveDate``, filtered
      by ``redriveFilter``; the context object has ``Execution.RedriveCount`` (and ``RedriveTime``),
      but a synchronous Express execution's has neither (recorded).

distributed_map (Distributed Map states; a capability: ``local/capabilities/distributed_map.py``)
  49. [L40] ``ItemBatcher`` (moto's grammar refused it): items, each selected first, are grouped
      into batches ``{"BatchInput": …, "Items": […]}`` within ``MaxItemsPerBatch`` and
      ``MaxInputBytesPerBatch``, evaluated (with their ``…Path`` forms and JSONata) by moto's own
      evaluators.
  50. [L40] A map run fails with ``States.ExceedToleratedFailureThreshold`` when more children
      failed than ``ToleratedFailureCount``/``…Percentage`` allow (moto succeeded whatever failed).
  51. [L40] ``UpdateMapRun`` acts on a running map run: more concurrency starts more children;
      new tolerances judge it.
  60. [L40] ``ItemReader`` reads JSON Lines (``JSONL``) and S3 inventory manifests (``MANIFEST``).
  88. [L40] ``ProcessorConfig``'s ``"ExecutionType": "EXPRESS"`` is accepted (moto's grammar knew
      STANDARD only).
  107. [L40] An ``ItemReader`` whose S3 call fails fails the Map with ``States.ItemReaderFailed``,
      S3's answer in the cause (moto: ``States.Runtime``, botocore's text); a listing reads every
      page, and an empty one is no items (moto: Python's ``KeyError`` text).

cloudformation (stacks)
  38. [L30] A state machine a stack creates is the Step Functions API's (moto put it where the API
      never looked), from ``Definition``, ``DefinitionString`` or ``DefinitionS3Location`` with its
      ``DefinitionSubstitutions``, type, logging, tracing and tags; updated in place unless its name
      or type changes; ``Fn::GetAtt`` ``Arn``.
  39. [L31] ``AWS::SQS::QueuePolicy`` sets its queues' ``Policy`` (moto skipped the type).
  165. [L31] A queue with a property CloudFormation does not have fails to create, naming it (moto
       passed it on: a ``Name`` renamed the queue behind its key, and its policy found no queue).
  158. [L31] ``AWS::SNS::Subscription`` subscribes its endpoint to its topic with its attributes
       (filter policy, raw delivery...); moto had no model, so a stack's topic delivered to nobody.
  40. [L31] A stack's table gets its TTL and point-in-time recovery, and an update changes it in
      place, items kept, unless its name or keys change (moto ignored both and could not update).
  43. [L33] A resource that fails to create fails the stack, not the CreateStack call: its event is
      CREATE_FAILED with the error, and the stack is rolled back (moto answered CreateStack with
      the failing service's error body, which no SDK could read); a rolled-back stack has no
      outputs (moto evaluated them, making what they named, and leaked that service's error).
  80. [L45] A function keeps its ``Layers``, and a layer version's Ref is its ARN (moto dropped
      the one and left the other empty).
  156. [L45] A function's ``Layers`` value that is not a layer version ARN fails its creation with
       Lambda's validation error (moto raised ValueError: "not enough values to unpack").
  100. [L45] A function's inline code (``Code.ZipFile``) is its ``index`` module for Node.js too
      (moto wrote ``index.py`` only).
  89. [L30] ``AWS::StepFunctions::Activity`` creates its activity (moto's CloudFormation lacked the type).
  90. [L30] ``Fn::GetAtt`` of a bucket's ``BucketName``, a topic's ``TopicArn`` and a queue's
      ``QueueUrl``.
  91. [L30] ``Fn::Sub`` trims a variable's spaces (``${ Name }``), as CloudFormation does.
  92. [L30] An event bus's ``Ref`` is its name (moto's was the bus object: a rule naming its bus
      failed to create).
  137. [L30] An ``Fn::Select`` past its list's end fails the resource in CloudFormation's words
       (moto's failure was Python's "list index out of range").
  139. [L30] An ``AWS::IAM::ManagedPolicy``'s ``PolicyDocument`` given as JSON text is that
       document (moto wrote the text out as a JSON string, which IAM refused).

apigateway (REST APIs from a stack)
  41. [L32] A stack's method keeps its whole integration: credentials, mapping templates,
      passthrough behaviour, integration and method responses (moto kept type, URI and method);
      a MOCK method, which has no URI, deploys (moto failed the stack).
  42. [L32] ``AWS::ApiGateway::Stage`` creates the stage with its variables, and its Ref is its
      name; ``AWS::ApiGateway::Account`` sets the account's CloudWatch role (moto's CloudFormation
      had neither).
  79. [L32] An API defined by its OpenAPI ``Body`` (the SAM transform's ``ServerlessRestApi``) is
      named by the body's title and gets its paths, methods and integrations (moto read ``Name``
      alone and failed the stack).

dynamodb
  8. [L8] Conditional writes are atomic (moto checked, then wrote, without a lock).
  61. [speed] Each distinct condition expression is lexed once (moto lexed it twice a write).
  62. [speed] Each distinct update expression is parsed once (moto parsed it twice an UpdateItem).
  67. [speed] Its validation starts from its tree unpickled, not deep-copied.
  117. [speed] Each validation walk class finds a node class's handler once (moto rebuilt it per
       node), kept as a function (no walk holds methods bound to itself).
  118. [speed] Its clauses are counted in one walk (moto re-walked each subtree at every node).
  130. [speed] A conditional write's condition is parsed once per request (moto parsed it for its
       check of the names and values used, and again for the write).

jsonata
  15. [L15, L16] JSONata and workflow variables evaluated with jsonata-python, with the functions
      Step Functions adds; failures are States.QueryEvaluationError.
  78. [L16] A JSONata expression that fails names the field it was specified for, in its cause
      and as the EvaluationFailed event's ``location`` (``Output/result``, ``Assign/result``…).
  142. [L15] A JSONPath state reads a variable's bracketed member (``$v['a']``) as JSONPath does
       (moto's JSONata read brackets as a filter and answered the whole variable).
  146. [L15] A JSONPath state's read of a variable's member that is not there is absent, as a
       missing path is (moto's JSONata read answered null, and ``IsPresent`` said present).
  159. [L15] A JSONPath state reads a variable as JSONPath reads a path, from the value as it was
       assigned (moto's JSONata read wrote 5.0 as 5). With fix 146, one patch.
  155. [L16] A JSONata Map's ItemSelector reads the Map's input as ``$states.input`` (moto read a
       JSONPath evaluation stack, which a JSONata state leaves empty: IndexError as the cause).
  58. [speed] A string result is not evaluated again to learn its type (moto re-parsed the whole
      expression, its variables declared ahead of it, for a check that always passed).
  86. [speed] ``$states`` reaches the evaluator as its value, not written into each expression as
      JSON text and parsed back.

Retired: 4 (a Fail state may re-throw ``States.*``; fix 87 now reports every such name as written).
"""

from __future__ import annotations

from sfn_idempotency.local.compat import moto_core
from sfn_idempotency.local.compat.answers import sync_executions, sync_executions_lock
from sfn_idempotency.local.compat.events import MAX_STATUS_EVENT_DATA_BYTES
from sfn_idempotency.local.compat.interpreter import forget_clients, retry_time, state_clock
from sfn_idempotency.local.compat.patching import IncompatibleMotoError
from sfn_idempotency.local.compat.redrive_fields import redrive_clock

__all__ = [
    "MAX_STATUS_EVENT_DATA_BYTES",
    "IncompatibleMotoError",
    "forget_clients",
    "redrive_clock",
    "retry_time",
    "state_clock",
    "sync_executions",
    "sync_executions_lock",
]

# Fix 81 before anything imports moto's interpreter (its Batch integration would import EC2).
moto_core.defer_batch_models()
