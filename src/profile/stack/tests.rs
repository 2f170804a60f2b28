//! Each language's trace with the signature it must give, and traces that must (and must not)
//! share one.

use super::{InApp, StackRules};

fn signature(trace: &str) -> String {
    StackRules::default().signature(trace)
}

/// The text of a JSON string's body as written (escapes in place, closing quote last).
fn unescape(raw: &str) -> String {
    serde_json::from_str(&format!("\"{raw}")).unwrap()
}

const KAFKA_CONNECT: &str = "org.apache.kafka.connect.errors.DataException: Failed to deserialize data for topic payments to Avro: \n\
\tat io.confluent.connect.avro.AvroConverter.toConnectData(AvroConverter.java:148)\n\
\tat org.apache.kafka.connect.runtime.WorkerSinkTask.convertValue(WorkerSinkTask.java:545)\n\
\tat java.base/java.lang.Thread.run(Thread.java:833)\n\
Caused by: org.apache.kafka.common.errors.SerializationException: Error retrieving Avro value schema for id 10471\n\
\tat io.confluent.kafka.serializers.AbstractKafkaAvroDeserializer.deserialize(AbstractKafkaAvroDeserializer.java:209)\n\
\t... 13 more\n\
Caused by: io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: Schema 10471 not found; error code: 40403\n\
\tat io.confluent.kafka.schemaregistry.client.rest.RestService.sendHttpRequest(RestService.java:236)\n\
\tat io.confluent.kafka.schemaregistry.client.rest.RestService.httpRequest(RestService.java:265)\n\
\t... 18 more\n";

#[test]
fn java_takes_the_last_caused_by_and_its_frames() {
    assert_eq!(
        signature(KAFKA_CONNECT),
        "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException at \
         io.confluent.kafka.schemaregistry.client.rest.RestService.sendHttpRequest, io.confluent.kafka.schemaregistry.client.rest.RestService.httpRequest"
    );
    let magic = "org.apache.kafka.connect.errors.DataException: Failed to deserialize data for topic payments to Avro: \n\
        \tat io.confluent.connect.avro.AvroConverter.toConnectData(AvroConverter.java:148)\n\
        Caused by: org.apache.kafka.common.errors.SerializationException: Unknown magic byte!\n\
        \tat io.confluent.kafka.serializers.AbstractKafkaSchemaSerDe.getByteBuffer(AbstractKafkaSchemaSerDe.java:244)\n";
    assert_ne!(signature(magic), signature(KAFKA_CONNECT), "two causes under one wrapper");
    let app = "java.lang.IllegalStateException: order 42 has no lines\n\
        \tat java.util.Objects.requireNonNull(Objects.java:233)\n\
        \tat com.shop.orders.OrderService.lambda$validate$3(OrderService.java:88)\n\
        \tat com.shop.orders.OrderService$1.apply(OrderService.java:40)\n\
        \tat com.shop.orders.Consumer.handle(Consumer.java:12)\n\
        \tat com.shop.orders.Main.main(Main.java:5)\n\
        \tSuppressed: java.io.IOException: close failed\n\
        \t\tat com.shop.orders.Other.close(Other.java:1)\n";
    assert_eq!(
        signature(app),
        "java.lang.IllegalStateException at com.shop.orders.OrderService.lambda$validate, com.shop.orders.OrderService$.apply, com.shop.orders.Consumer.handle"
    );
    // Line numbers and generated numbers never enter it.
    assert_eq!(signature(app), signature(&app.replace(":88)", ":91)").replace("$3", "$7").replace("order 42", "order 7")));
}

#[test]
fn python_takes_the_first_traceback_of_a_chain_nearest_frame_first() {
    let chained = "Traceback (most recent call last):\n\
        \x20 File \"/var/task/app.py\", line 30, in handler\n\
        \x20   return process(event)\n\
        \x20 File \"/var/task/orders/process.py\", line 12, in process\n\
        \x20   sku = item['sku']\n\
        \x20 File \"/var/lang/lib/python3.12/site-packages/lib/x.py\", line 5, in get\n\
        \x20   return d[k]\n\
        KeyError: 'sku'\n\n\
        During handling of the above exception, another exception occurred:\n\n\
        Traceback (most recent call last):\n\
        \x20 File \"/var/task/app.py\", line 32, in handler\n\
        \x20   raise ValueError(f'bad item {item}')\n\
        ValueError: bad item 17\n";
    assert_eq!(signature(chained), "KeyError at process.process (sku = item['sku']), app.handler");
    // One error type raised on two lines of one function: two causes.
    let other_line = chained.replace("sku = item['sku']", "customer = event['customer_id']").replace("KeyError: 'sku'", "KeyError: 'customer_id'");
    assert_ne!(signature(chained), signature(&other_line));
    assert_eq!(signature(chained), signature(&chained.replace("line 12", "line 14").replace("bad item 17", "bad item 9")));
}

#[test]
fn node_dotnet_and_go() {
    let node = "TypeError: Cannot read properties of undefined (reading 'id')\n\
        \x20   at processOrder (/app/src/handler.js:10:15)\n\
        \x20   at Array.map (<anonymous>)\n\
        \x20   at /app/node_modules/lodash/lodash.js:1:1\n\
        \x20   at async Promise.all (index 0)\n\
        \x20   at async main (/app/src/index.js:3:5)\n";
    assert_eq!(signature(node), "TypeError at handler.processOrder, index.main");

    let dotnet = "System.InvalidOperationException: Order 42 failed ---> System.TimeoutException: Timed out after 30000 ms\n\
        \x20  at Shop.Orders.Gateway.<CallAsync>d__4.MoveNext() in C:\\src\\Gateway.cs:line 51\n\
        \x20  at System.Runtime.CompilerServices.TaskAwaiter.ThrowForNonSuccess(Task task)\n\
        \x20  --- End of inner exception stack trace ---\n\
        \x20  at Shop.Orders.OrderService.Process(Order order) in C:\\src\\OrderService.cs:line 42\n\
        \x20  at Shop.Program.Main(String[] args)\n";
    assert_eq!(signature(dotnet), "System.TimeoutException at Shop.Orders.Gateway.CallAsync");

    let go = "panic: runtime error: invalid memory address or nil pointer dereference\n\
        [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a5b3c]\n\n\
        goroutine 1 [running]:\n\
        net/http.(*conn).serve(0xc000100000)\n\
        \t/usr/local/go/src/net/http/server.go:1995 +0x1c\n\
        main.(*Server).handle(0x0, {0x5e8a20, 0xc000010000})\n\
        \t/app/server.go:42 +0x1c\n\
        github.com/shop/orders.Process[...](0x1)\n\
        \t/app/orders/process.go:7 +0x25\n\
        created by main.main in goroutine 1\n\
        \t/app/main.go:10 +0x25\n";
    assert_eq!(signature(go), "panic at main.(*Server).handle, github.com/shop/orders.Process");
}

#[test]
fn frames_outside_the_app_are_used_only_when_nothing_else_is_there() {
    let framework = "java.lang.NullPointerException\n\tat java.util.Objects.requireNonNull(Objects.java:233)\n\tat java.lang.Thread.run(Thread.java:833)\n";
    assert_eq!(signature(framework), "java.lang.NullPointerException at java.util.Objects.requireNonNull, java.lang.Thread.run");
}

#[test]
fn a_profile_names_its_own_frames_and_how_many() {
    let rules = StackRules::new(1, InApp { in_app: vec!["org.apache.kafka.connect.*".into()], not_in_app: vec![] });
    assert_eq!(
        rules.signature(KAFKA_CONNECT),
        "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException at io.confluent.kafka.schemaregistry.client.rest.RestService.sendHttpRequest"
    );
    let rules = StackRules::new(2, InApp { in_app: vec![], not_in_app: vec!["*Consumer*".into()] });
    let trace = "java.lang.IllegalStateException: x\n\tat com.shop.Consumer.handle(Consumer.java:12)\n\tat com.shop.Main.main(Main.java:5)\n";
    assert_eq!(rules.signature(trace), "java.lang.IllegalStateException at com.shop.Main.main");
}

#[test]
fn text_without_frames_is_a_messages_root_cause() {
    assert_eq!(signature("connection refused by 10.0.0.7"), "connection refused by <*>");
    assert_eq!(signature(""), "");
    // What an absent trace is given without parsing is what parsing it would give.
    assert_eq!(StackRules::default().compute(""), (String::new(), false));
    assert_eq!(StackRules::default().with_signature_escaped("\"", |_| unreachable!("nothing to unescape"), str::to_string), "");
    assert_eq!(signature("KeyError: 'sku'"), "KeyError: <*>");
}

#[test]
fn globs() {
    use super::in_app::glob;
    assert!(glob("com.shop.*", "com.shop.orders.X.y"));
    assert!(glob("*/app/*", "/srv/app/x.py"));
    assert!(glob("a*b*c", "abc") && glob("a*b*c", "a-b-c") && !glob("a*b*c", "a-c"));
    assert!(glob("x", "x") && !glob("x", "xy"));
}

/// Signatures are remembered by a trace's shape (its lines without the messages): what comes
/// from memory is what parsing gives, for traces whose messages differ and whose types do.
#[test]
fn a_remembered_signature_is_the_computed_one() {
    let rules = StackRules::default();
    let traces = [
        KAFKA_CONNECT.to_string(),
        KAFKA_CONNECT.replace("Schema 10471 not found", "Schema 7 not found"),
        KAFKA_CONNECT.replace("RestClientException: Schema", "OtherException: Schema"),
        "System.A: x ---> System.B: y\n   at Shop.X.Run()\n".to_string(),
        "System.A: x ---> System.C: y\n   at Shop.X.Run()\n".to_string(),
        "Exception in thread \"main\" java.lang.X: m\n\tat a.B.c(B.java:1)\n".to_string(),
        "Exception in thread \"main\" java.lang.Y: m\n\tat a.B.c(B.java:1)\n".to_string(),
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\nKeyError: 'x'\n".to_string(),
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\nValueError: 'x'\n".to_string(),
        "no frames: 12 here".to_string(),
        "no frames: 13 here".to_string(),
    ];
    for _ in 0..2 {
        for trace in &traces {
            assert_eq!(rules.signature(trace), rules.explain(trace).template, "{trace}");
        }
    }
    assert_ne!(rules.signature(&traces[3]), rules.signature(&traces[4]), ".NET's inner type is in the shape");
    assert_ne!(rules.signature(&traces[5]), rules.signature(&traces[6]));
    assert_eq!(rules.signature(&traces[9]), "no frames: <*> here");
}

/// Any cut of a trace, and any line of it doubled or dropped, gives a signature, not a panic.
#[test]
fn damaged_traces_never_panic() {
    let rules = StackRules::default();
    let dotnet = "System.A: x ---> System.B: y\n   at Shop.X.<Run>d__4.MoveNext() in C:\\x.cs:line 3\n   --- End of inner exception stack trace ---\n   at Shop.Y.Z(Int32 n)\n";
    let go = "panic: x\n\ngoroutine 1 [running]:\nmain.(*S).h(0x0, {0x1})\n\t/app/s.go:4 +0x1\ncreated by main.main in goroutine 1\n\t/app/m.go:1 +0x2\n";
    let python = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n    ^^^\nKeyError: 'x'\n";
    let node = "TypeError: x\n    at f (/a/b.js:1:2)\n    at /a/c.js:3:4\n  [cause]: Error: y\n    at g (/a/d.js:5:6)\n";
    for trace in [KAFKA_CONNECT, dotnet, go, python, node] {
        for (cut, _) in trace.char_indices() {
            rules.signature(&trace[..cut]);
            rules.signature(&trace[cut..]);
        }
        let lines: Vec<&str> = trace.lines().collect();
        for i in 0..lines.len() {
            let mut dropped = lines.clone();
            dropped.remove(i);
            rules.signature(&dropped.join("\n"));
            let mut doubled = lines.clone();
            doubled.insert(i, lines[i]);
            rules.signature(&doubled.join("\n"));
        }
    }
}

/// Lambda's `stackTrace` is a list of frames, no exception line (its type is `errorType`):
/// Python's and Node's as their runtimes print them, Java's without `at`.
#[test]
fn lambdas_frame_lists() {
    let python = "  File \"/var/task/lambda_function.py\", line 8, in lambda_handler\n    return process(event)\n\n  File \"/var/task/orders.py\", line 21, in process\n    sku = item['sku']\n";
    assert_eq!(signature(python), "? at orders.process (sku = item['sku']), lambda_function.lambda_handler");
    let node = "TypeError: Cannot read properties of undefined (reading 'sku')\n    at Runtime.handler (file:///var/task/index.mjs:5:11)\n    at Runtime.handleOnceNonStreaming (file:///var/runtime/index.mjs:1173:29)";
    assert_eq!(signature(node), "TypeError at index.Runtime.handler");
    let java = "example.Handler.handleRequest(Handler.java:34)\njava.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(Unknown Source)\nexample.Orders.load(Orders.java:12)";
    assert_eq!(signature(java), "? at example.Handler.handleRequest, example.Orders.load");
}

#[test]
fn a_node_frame_without_at_is_a_frame() {
    assert_eq!(signature("exports.handler (/var/task/index.js:18:18)"), "? at index.exports.handler");
    // A sentence with brackets is no frame.
    assert_eq!(signature("order 7 failed (see the log)"), "order <*> failed (see the log)");
}

/// A trace still written as a JSON string (as a raw read leaves it) has the signature of its
/// text, from memory or not: escapes as units, tabs as indentation, `\u` escapes unescaped.
#[test]
fn an_escaped_trace_has_its_texts_signature() {
    let rules = StackRules::default();
    let python = "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 12, in handler\n    sku = item[\"sku\"]\nKeyError: 'sku'\n";
    let traces = [
        KAFKA_CONNECT.to_string(),
        KAFKA_CONNECT.replace("10471", "99"),
        python.to_string(),
        python.replace("'sku'", "'customer_id'"),
        python.replace("KeyError: 'sku'", "KeyError: 'a\\\\nb'"),
        python.replace("item[\"sku\"]", "item[\"customer_id\"]"),
        "java.lang.X: m\r\n\tat a.B.c(B.java:1)\r\n".to_string(),
        "Traceback (most recent call last):\n\u{20} File \"a.py\", line 1, in f\n    g()\nValueError: x\n".to_string(),
        "plain message 42 with a \\n that is a backslash and an n".to_string(),
    ];
    for _ in 0..2 {
        for trace in &traces {
            let json = serde_json::to_string(trace).unwrap();
            let raw = &json[1..];
            let got = rules.with_signature_escaped(raw, unescape, str::to_string);
            assert_eq!(got, rules.explain(trace).template, "{json}");
        }
        // A space written as \u0020 is indentation too: such traces are unescaped first.
        let spaced = "Traceback (most recent call last):\\n\\u0020 File \\\"a.py\\\", line 1, in f\\n\\u0020   g()\\nValueError: x\"";
        assert_eq!(rules.with_signature_escaped(spaced, unescape, str::to_string), "ValueError at a.f (g())");
    }
}

/// Traces whose shapes were once ambiguous: each is remembered as what parsing gives.
#[test]
fn shapes_never_stand_for_two_signatures() {
    let rules = StackRules::default();
    let texts = [
        "Error: boom\n    at run (/app/a.js:1:2)".to_string(),
        "Exception in thread \"worker: 1\" java.lang.IllegalStateException: x\n\tat com.app.Foo.bar(Foo.java:1)".to_string(),
        "Exception in thread \"worker: 1\" java.lang.NullPointerException: x\n\tat com.app.Foo.bar(Foo.java:1)".to_string(),
        "java.lang.A: m\n\u{a0}Caused by: java.lang.B: x\n\tat a.B.c(B.java:1)".to_string(),
        "java.lang.A: m\n\u{a0}Caused by: java.lang.C: x\n\tat a.B.c(B.java:1)".to_string(),
        "Error: x\nat foo (/srv/a: b/alpha.js:1:2)".to_string(),
        "Error: x\nat foo (/srv/a: b/beta.js:1:2)".to_string(),
        "java.lang.IllegalStateException: x\n\tat a.B.c(B.java:1)".to_string(),
        "java.lang.IllegalStateException\u{1}\n\tat a.B.c(B.java:1)".to_string(),
    ];
    for _ in 0..2 {
        for text in &texts {
            assert_eq!(rules.signature(text), rules.explain(text).template, "{text:?}");
            let json = serde_json::to_string(text).unwrap();
            // An escaped trace never takes a plain one's memory, nor the other way round.
            assert_eq!(rules.with_signature_escaped(&json[1..], unescape, str::to_string), rules.explain(text).template, "{json}");
            let plain_looking = &json[2..];
            if plain_looking.ends_with('"') {
                let _ = rules.signature(plain_looking);
            }
        }
    }
}

#[test]
fn modern_dotnet_suppressed_causes_go_generics_and_node_codes() {
    let dotnet = "System.InvalidOperationException: Order 42 failed\n ---> System.TimeoutException: Timed out\n   at Shop.Db.Query() in C:\\db.cs:line 3\n   --- End of inner exception stack trace ---\n   at Shop.Orders.Process() in C:\\o.cs:line 9\n";
    assert_eq!(signature(dotnet), "System.TimeoutException at Shop.Db.Query");
    let suppressed = "java.lang.IllegalStateException: x\n\tat com.app.Main.run(Main.java:3)\n\tSuppressed: java.io.IOException: close\n\t\tat com.app.Res.close(Res.java:1)\n\tCaused by: java.io.IOException: flush\n\t\tat com.app.Res.flush(Res.java:2)\n";
    assert_eq!(signature(suppressed), "java.lang.IllegalStateException at com.app.Main.run");
    let go = |method: &str| format!("panic: x\n\ngoroutine 1 [running]:\nexample.com/app/store.(*Box[...]).{method}(0x1)\n\t/app/store.go:4 +0x1\n");
    assert_eq!(signature(&go("Get")), "panic at example.com/app/store.(*Box).Get");
    assert_ne!(signature(&go("Get")), signature(&go("Put")));
    let node = "TypeError [ERR_INVALID_ARG_TYPE]: The \"path\" argument must be of type string\n    at readFile (/app/io.js:1:2)";
    assert_eq!(signature(node), "TypeError at io.readFile");
}

#[test]
fn ruby_backtraces_as_sidekiq_keeps_them_and_as_full_message_prints_them() {
    // Sidekiq's error_backtrace (Ruby 3.3: a backquote opens the label): gems are not the app's.
    let sidekiq = "/app/app/services/billing/charge.rb:41:in `call'\n\
        /app/app/jobs/charge_job.rb:12:in `block in perform'\n\
        /usr/local/bundle/gems/activerecord-7.1.3/lib/active_record/transactions.rb:346:in `transaction'\n\
        /app/app/jobs/charge_job.rb:9:in `perform'\n\
        /usr/local/bundle/gems/sidekiq-7.2.0/lib/sidekiq/processor.rb:202:in `execute_job'";
    // The first three of the app's frames (the block and its method are two).
    assert_eq!(signature(sidekiq), "? at charge.call, charge_job.perform, charge_job.perform");
    // Ruby 3.4 quotes labels with the class: the same frames, named alike.
    let ruby34 = "/app/app/services/billing/charge.rb:44:in 'Billing::Charge#call'\n\
        /app/app/jobs/charge_job.rb:12:in 'block in ChargeJob#perform'\n\
        /usr/local/bundle/gems/sidekiq-8.0.1/lib/sidekiq/processor.rb:210:in 'Sidekiq::Processor#execute_job'";
    assert_eq!(signature(ruby34), "? at charge.call, charge_job.perform");
    // full_message: the first line carries the message and the class; `from` lines follow.
    let full = "app/jobs/x.rb:12:in 'perform': boom (RuntimeError)\n\tfrom app/jobs/x.rb:3:in 'run'\n\tfrom /usr/lib/ruby/3.4.0/set.rb:9:in 'each'";
    assert_eq!(signature(full), "RuntimeError at x.perform, x.run");
    // Only gems and Ruby's library: those frames, as nothing else is there.
    assert_eq!(signature("/usr/local/bundle/gems/redis-5.0/lib/redis.rb:8:in `call'"), "? at redis.call");
    assert_ne!(signature(sidekiq), signature("/app/app/jobs/refund_job.rb:7:in `perform'"));
}

#[test]
fn no_frames_asked_is_the_root_causes_type_alone() {
    let rules = StackRules::new(0, InApp::default());
    assert_eq!(rules.signature(KAFKA_CONNECT), "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException");
    // A class name alone (a header that holds only it) reads as the same type.
    assert_eq!(rules.signature("io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException"), rules.signature(KAFKA_CONNECT));
}
